"""Request and response shapes of the API, in camelCase, a module per resource.

Responses on hot paths are built by plain functions (``memory_out`` ...); the
``*Out`` serializers describe them for the OpenAPI schema, and a test keeps the
two in step.
"""
