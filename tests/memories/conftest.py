import pytest
from django.contrib.auth import get_user_model


@pytest.fixture
def admin_client(client):
    """The admin as a superuser: every project's rows."""
    superuser = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(superuser)
    return client
