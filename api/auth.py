"""Bearer API keys for agents; sessions for people."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from memories import replicas, services
from memories.actors import Actor
from memories.keys import secret_matches, split_token
from memories.models import ApiKey
from memories.selectors import api_key_for_token
from ops.errors import CHALLENGE, PASS_KEY

# The WSGI environ entry of a request the service makes to itself (mcp_http.transport: an
# MCP tool calling the API) with a key it has just authenticated: a ``Vouched`` holding
# that key. A WSGI server puts only CGI variables and ``HTTP_*`` headers, all strings, in
# the environ, so no request from outside can carry one.
VOUCHED = "memory_layer.vouched_key"


@dataclass(frozen=True)
class Vouched:
    """The key of the request that makes this one in process (see VOUCHED)."""

    api_key: ApiKey


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
    """``Authorization: Bearer <key>``. A missing, malformed, unknown or revoked key is a 401
    whose message says what to send; its challenge is not a Bearer one (``ops.errors``)."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiKeyUser, ApiKey] | None:
        header = authentication.get_authorization_header(request).split()
        if not header:
            return None
        if header[0].lower() != self.keyword.lower().encode():
            # Never echoed: what came first may be the key itself.
            raise exceptions.AuthenticationFailed(
                f"The Authorization header holds no Bearer key: {PASS_KEY}."
            )
        if len(header) != 2:
            told = "No key after 'Bearer'" if len(header) == 1 else "The key has spaces in it"
            raise exceptions.AuthenticationFailed(f"{told}: {PASS_KEY}.")
        try:
            token = header[1].decode()
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed(
                f"The API key is not valid text: {PASS_KEY}."
            ) from None
        vouched = _vouched(request, token)
        if vouched is not None:  # authenticated (and its use recorded) by the outer request
            replicas.note_project(vouched.project_id)
            return ApiKeyUser(vouched), vouched
        api_key = api_key_for_token(token)
        if api_key is None:
            raise exceptions.AuthenticationFailed(
                f"Unknown or revoked API key: {PASS_KEY} (a current key of the project,"
                " as made by manage.py create_api_key)."
            )
        with replicas.bookkeeping():  # not a write its caller reads back
            services.api_key_touch(api_key=api_key)
        replicas.note_project(api_key.project_id)
        return ApiKeyUser(api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return CHALLENGE


def _vouched(request: Request, token: str) -> ApiKey | None:
    """The key an in-process caller vouches for, if the request's own token is that key."""
    vouched = request._request.META.get(VOUCHED)
    if not isinstance(vouched, Vouched):
        return None
    parts = split_token(token)
    api_key = vouched.api_key
    if parts is None or parts[0] != api_key.prefix:
        return None
    return api_key if secret_matches(parts[1], api_key.secret_hash) else None


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
