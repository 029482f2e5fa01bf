"""Amounts on the accounting screens: in the asset's unit, or as raw minor units when the screen's toggle is on."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from porto_console.console.services.accounting import formatted

register = template.Library()


@register.simple_tag(takes_context=True)
def money(context, minor_units: int, asset: str):
    """``1234567`` USDC as ``1.234567 USDC`` (the minor units on hover), or ``1234567`` with ``raw`` on."""
    if context.get("raw"):
        return format_html('<span class="money raw" title="{}">{}</span>', formatted(minor_units, asset), minor_units)
    return format_html('<span class="money" title="{} minor units">{}</span>', minor_units,
                       formatted(minor_units, asset))
