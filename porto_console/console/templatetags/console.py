"""Template helpers: paging links that keep filters, times, amounts (or raw minor units), hashes, sealed handles, enum words and days."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.forms import HiddenInput
from django.utils.html import format_html, format_html_join

from ledger_engine.amounts import parse_amount
from porto_console.console import labels
from porto_console.console.handles import seal
from porto_console.console.services.accounting import formatted

register = template.Library()


@register.simple_tag(takes_context=True)
def query_with(context, **changes) -> str:
    """The current query string with ``changes`` applied (filters survive paging)."""
    query = context["request"].GET.copy()
    for name, value in changes.items():
        query[name] = value
    return "?" + query.urlencode()


@register.filter
def ms_time(milliseconds) -> str:
    if milliseconds in (None, ""):
        return ""
    return datetime.fromtimestamp(int(milliseconds) / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@register.simple_tag(takes_context=True)
def money(context, minor_units, asset: str = "USDC"):
    """An amount (integer minor units, or their canonical text) in the asset's unit with the minor units on
    hover, or as the raw minor units when the screen's toggle is on (``raw`` in the context)."""
    value = parse_amount(str(minor_units)) if isinstance(minor_units, str) else int(minor_units)
    if context.get("raw"):
        return format_html('<span class="money raw" title="{}">{}</span>', formatted(value, asset), value)
    return format_html('<span class="money" title="{} minor units">{}</span>', value, formatted(value, asset))


@register.simple_tag(takes_context=True)
def recipient(context, recipient_id):
    """A recipient by its display name, with its ID beside it (the ID is what the ledger pays), or by its ID
    alone when it has none. The name is isolated (``<bdi>``) so a right-to-left name cannot reorder its
    neighbours; ``Porto`` for a line that pays Porto itself (no recipient)."""
    if not recipient_id:
        return "Porto"
    name = _display_name(context, recipient_id)
    if name is None:
        return format_html('<span class="recipient"><code class="record-id">{}</code></span>', recipient_id)
    return format_html('<span class="recipient"><bdi class="display-name">{}</bdi> '
                       '<code class="record-id">{}</code></span>', name, recipient_id)


@register.simple_tag(takes_context=True)
def recipient_label(context, recipient_id) -> str:
    """A recipient as plain text, for a label a screen reader reads: ``name (ID)``, or the ID alone."""
    if not recipient_id:
        return "Porto"
    name = _display_name(context, recipient_id)
    return f"{name} ({recipient_id})" if name else str(recipient_id)


def _display_name(context, recipient_id: str) -> str | None:
    """The recipient's display name, read once a page (``context.DisplayNames``), or None."""
    names = context.get("display_names")
    return names.of(recipient_id) if names is not None else None


@register.filter
def short_hash(digest) -> str:
    return f"{digest[:12]}…" if digest else ""


@register.filter
def handle(value: str, kind: str) -> str:
    return seal(kind, value)


@register.filter
def age(milliseconds) -> str:
    """A duration for people: the two largest units, e.g. ``4 min 12 s`` or ``3 h 5 min``."""
    seconds = max(int(milliseconds), 0) // 1000
    parts = [(seconds // 86400, "d"), (seconds // 3600 % 24, "h"), (seconds // 60 % 60, "min"), (seconds % 60, "s")]
    shown = [f"{value} {unit}" for value, unit in parts if value]
    return " ".join(shown[:2]) or "0 s"


@register.filter
def human(value) -> str:
    """An enum value in words, for headings and choices: ``prepared_in_error`` -> ``Prepared in error``."""
    return labels.human(value) if value not in (None, "") else ""


@register.filter
def label(value) -> str:
    """An enum value in words, with the ledger's own value on hover."""
    if value in (None, ""):
        return ""
    return format_html('<span class="enum" title="{}">{}</span>', value, labels.human(value))


@register.filter
def day(value) -> str:
    """A UTC day number as its date, with the number on hover: ``20728`` -> ``01 Oct 2026``."""
    if value in (None, ""):
        return ""
    date = labels.day_date(value)
    return format_html('<time datetime="{}" title="day {}">{}</time>', date.strftime("%Y-%m-%d"), value,
                       date.strftime("%d %b %Y"))


@register.filter
def count_of(number, noun: str) -> str:
    """``1 payment``, ``2 payments``; ``noun`` is ``singular`` or ``singular,plural``."""
    singular, _, plural = noun.partition(",")
    return f"{number} {singular if int(number) == 1 else plural or singular + 's'}"


@register.filter
def in_words(bound_field):
    """A form field rendered with its choices' labels in words (``evidence_verified`` -> ``Evidence verified``)."""
    field = bound_field.field
    if getattr(field, "choices", None) and not isinstance(field.widget, HiddenInput):
        field.choices = [_choice_in_words(value, text) for value, text in field.choices]
    return bound_field


def _choice_in_words(value, text):
    """One choice, or an option group (its text a list of choices) with each of its choices in words."""
    if isinstance(text, list | tuple):
        return value, [(inner, labels.human(inner_text)) for inner, inner_text in text]
    return value, labels.human(text)


@register.filter
def labels_of(values) -> str:
    """Several enum values in words, comma-separated, each with its raw value on hover."""
    return format_html_join(", ", "{}", ((label(value),) for value in values or ()))


@register.simple_tag(takes_context=True)
def sort_header(context, column: str, title: str):
    """A sortable column's header: a link that sorts by it (again: the other way), keeping the filters.

    Reads the list's ``query`` (a ``listing.ListQuery``) from the context.
    """
    query = context["query"]
    current = query.sort == column
    descending = not query.descending if current else column in query.descending_first
    params = context["request"].GET.copy()
    params["sort"], params["dir"] = column, "desc" if descending else "asc"
    for cursor in ("page", "before", "after"):  # a new order starts at its first page
        params.pop(cursor, None)
    state = ("descending" if query.descending else "ascending") if current else "none"
    arrow = (" ▼" if query.descending else " ▲") if current else ""
    return format_html('<th scope="col" aria-sort="{}"><a href="?{}" class="sort-link">{}</a>{}</th>',
                       state, params.urlencode(), title, arrow)

