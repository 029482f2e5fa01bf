"""Dashboard: the head, the invariant status, what is waiting for someone and the money it holds back, what was paid
in a period, backups and dispatch."""

from __future__ import annotations

from porto_console.console import charts
from porto_console.console.forms import CommandForm
from porto_console.console.roles import OPS, actor_id, has_role, may_submit, user_roles
from porto_console.console.screens import DASHBOARD, SCREENS
from porto_console.console.services import dashboard as service
from porto_console.console.services import dashboard_money as money
from porto_console.console.services import waiting
from porto_console.console.services.quarantine import quarantine
from porto_console.effects import delivery
from porto_console.console.views.common import render_screen
from porto_console.console.views import dispatch
from ledger_engine.checkpoint.integrity import last_verification
from porto_console.effects.backups import newest_good_backup
from porto_console.ledger import owner, read_view


def dashboard(request):
    today = money.utc_day(money.now_ms())
    period = money.period(request.GET.get("period"), today)
    read = read_view(lambda view: (service.figures(view), charts.holds_by_age(view), charts.payments_by_state(view),
                                   money.paid_trend(view, period), money.money_waiting(view)))
    figures, holds_chart, payments_chart, paid, held_back = read.data
    roles = user_roles(request.user)
    quarantined = len(delivery.quarantined(quarantine())) if OPS in roles else 0
    queue = read_view(lambda view: waiting.waiting_for(
        view, actor_id(request.user), roles, open_holds=figures.open_holds, quarantined=quarantined)).data
    dispatch_state = owner().dispatch_state()
    return render_screen(request, "console/dashboard.html", DASHBOARD.title, read, figures=figures,
                         charts=[money.paid_chart(paid), charts.money_per_day(figures.daily), holds_chart,
                                 payments_chart],
                         paid=paid, presets=money.presets(today), held_back=held_back,
                         backup=newest_good_backup(), dispatch=dispatch_state,
                         dispatch_forms=dispatch.forms_for(request, dispatch_state),
                         verified=last_verification(owner().path),
                         opens={screen.url_name.replace("-", "_"): has_role(request.user, screen.roles)
                                for screen in SCREENS},
                         waiting=queue,
                         check_form=CommandForm() if may_submit(request.user, "CheckConservation") else None)
