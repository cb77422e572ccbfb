from django.apps import AppConfig


class McpHttpConfig(AppConfig):
    name = "mcp_http"
    verbose_name = "MCP over HTTP"
