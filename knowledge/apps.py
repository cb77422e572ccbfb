from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"

    def ready(self) -> None:
        from knowledge.receivers import reread
        from memories.hooks import memories_written

        memories_written.connect(reread, dispatch_uid="knowledge.reread")
