"""Small server-rendered SVG bar charts: no script, no external resource, integer geometry only."""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from porto_console.console.templatetags.console import amount

WIDTH, HEIGHT, BAR_GAP, LABEL_SPACE = 320, 120, 4, 16
DAY_MS = 86_400_000


def day_label(day: int) -> str:
    return datetime.fromtimestamp(day * DAY_MS // 1000, UTC).strftime("%d %b")


def bar_chart(title: str, values: dict[int, int], asset: str = "USDC") -> SafeString:
    """One bar per day, scaled to the largest; each bar's tooltip gives the exact amount."""
    if not values:
        return format_html('<p class="chart">{}: nothing yet.</p>', title)
    days, peak = sorted(values), max(values.values()) or 1
    bar_width = max(2, (WIDTH - BAR_GAP * len(days)) // len(days))
    plot = HEIGHT - LABEL_SPACE
    bars = format_html_join("", '<rect x="{}" y="{}" width="{}" height="{}"><title>{}: {}</title></rect>', (
        (index * (bar_width + BAR_GAP), plot - values[day] * plot // peak, bar_width, values[day] * plot // peak,
         day_label(day), amount(str(values[day]), asset))
        for index, day in enumerate(days)))
    labels = format_html('<text x="0" y="{}">{}</text><text x="{}" y="{}" text-anchor="end">{}</text>',
                         HEIGHT - 2, day_label(days[0]), WIDTH, HEIGHT - 2, day_label(days[-1]))
    return format_html('<figure class="chart"><figcaption>{} per day (peak {})</figcaption>'
                       '<svg role="img" aria-label="{}" width="{}" height="{}" viewBox="0 0 {} {}">{}{}</svg></figure>',
                       title, amount(str(peak), asset), title, WIDTH, HEIGHT, WIDTH, HEIGHT, bars, labels)
