"""Whether the header offers the search: to those whose roles open a kind of record it finds."""

from __future__ import annotations

from django import template

from porto_console.console.roles import user_roles
from porto_console.console.services.record_search import searchable_kinds

register = template.Library()


@register.filter
def searches_records(user) -> bool:
    return bool(searchable_kinds(user_roles(user)))
