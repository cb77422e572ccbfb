from django.apps import AppConfig


class AssemblyConfig(AppConfig):
    name = "assembly"

    def ready(self) -> None:
        from assembly import cache
        from memories.hooks import memories_changed

        memories_changed.connect(cache.on_memories_changed, dispatch_uid="assembly.cache")
