"""Dashboard: the head, the invariant status and what is waiting for someone."""

from __future__ import annotations

from porto_console.console.charts import bar_chart
from porto_console.console.screens import DASHBOARD
from porto_console.console.services import dashboard as service
from porto_console.console.views.common import render_screen
from porto_console.ledger import read_at_boundary


def dashboard(request):
    read = read_at_boundary(service.figures)
    charts = [bar_chart(name.capitalize(), read.data.daily[name]) for name in service.CHART_SERIES]
    return render_screen(request, "console/dashboard.html", DASHBOARD.title, read, figures=read.data, charts=charts)
