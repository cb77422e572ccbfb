"""The store's admin: operators' bulk edits of memories (every change goes through
memories.services, so history is kept), and projects with their members, keys and runs.
Importing the modules registers their admins."""

from memories.admin import bulk, memories, projects

__all__ = ["bulk", "memories", "projects"]
