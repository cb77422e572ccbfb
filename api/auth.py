"""Bearer API keys for agents; sessions for people."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from memories import services
from memories.actors import Actor
from memories.models import ApiKey
from memories.selectors import api_key_for_token


class ApiKeyUser:
    """The principal of a request made with an API key: authenticated, with no permissions,
    so nothing reserved to people (approval, rejection) is open to it."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False
    pk = None
    id = None

    def __init__(self, api_key: ApiKey) -> None:
        self.api_key = api_key
        self.username = f"api-key:{api_key.name}"

    def get_username(self) -> str:
        return self.username

    def has_perm(self, perm: str, obj: Any = None) -> bool:
        return False

    def has_perms(self, perms: Any, obj: Any = None) -> bool:
        return False

    def __str__(self) -> str:
        return self.username


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiKeyUser, ApiKey] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "Send the key as 'Authorization: Bearer <key>', with no spaces in the key."
            )
        try:
            token = header[1].decode()
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("The API key is not valid text.") from None
        api_key = api_key_for_token(token)
        if api_key is None:
            raise exceptions.AuthenticationFailed("Unknown or revoked API key.")
        services.api_key_touch(api_key=api_key)
        return ApiKeyUser(api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="api"'


def actor_for(request: Request) -> Actor:
    if isinstance(request.auth, ApiKey):
        return Actor.for_api_key(request.auth)
    return Actor.for_user(request.user)


def api_key_of(request: Request) -> ApiKey | None:
    return request.auth if isinstance(request.auth, ApiKey) else None


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = ApiKeyAuthentication
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A project's API key, made by `manage.py create_api_key`.",
        }
