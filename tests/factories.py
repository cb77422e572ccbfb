"""factory-boy factories, one per model. Memories are built through the services
where the services derive fields (token count, hash, tag regexes)."""

from __future__ import annotations

import random

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from faker.providers.lorem.la import Provider as Latin

from memories import services
from memories.actors import Actor
from memories.models import MemoryPolicy, Project, Run


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.com")
    password = factory.django.Password("pass-for-tests")


class ReviewerFactory(UserFactory):
    is_staff = True

    @factory.post_generation
    def review_permission(self, create: bool, extracted: object, **kwargs: object) -> None:
        # A reviewer of every project and of the global memories (memories.roles).
        if create:
            self.user_permissions.add(
                *Permission.objects.filter(
                    content_type__app_label="memories",
                    codename__in=["review_memory", "review_global_memory"],
                )
            )


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Project {n}")
    slug = factory.Sequence(lambda n: f"project-{n}")
    policy = factory.RelatedFactory("tests.factories.MemoryPolicyFactory", "project")


class MemoryPolicyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = MemoryPolicy

    project = factory.SubFactory(ProjectFactory, policy=None)


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Run

    project = factory.SubFactory(ProjectFactory)
    external_id = factory.Sequence(lambda n: f"run-{n}")
    task_title = "A task"
    write_scope = factory.LazyFunction(list)


def distinct_sentence(n: int) -> str:
    """A sentence of its own for the ``n``-th memory: seven Latin words, so that two memories
    of a test neither repeat nor contradict each other unless the test says so."""
    words = random.Random(n).sample(Latin.word_list, 7)
    return " ".join(words).capitalize() + "."


class MemoryFactory(factory.Factory):
    """Builds a memory through memories.services.memory_create."""

    class Meta:
        model = dict

    project = factory.SubFactory(ProjectFactory)
    type = "pattern"
    content = factory.Sequence(lambda n: distinct_sentence(n))
    source = "run"
    tags = factory.LazyFunction(list)
    relevance_score = 0.5
    actor = factory.LazyFunction(lambda: Actor.system("tests"))

    @classmethod
    def _create(cls, model_class: type, **kwargs: object) -> object:
        return services.memory_create(**kwargs)

    @classmethod
    def _build(cls, model_class: type, **kwargs: object) -> object:
        raise NotImplementedError("memories are created through the services")
