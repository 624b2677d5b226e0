"""`{% verdict_panel verdict %}`: a verdict shown answer first (studio.verdicts), with its speedup bars; `|specialised`:
the sentence for a verdict whose solution only works at the problem's shapes (issue 22), '' otherwise."""

from django import template

from studio.charts import speedup_bars
from sandbox.verdict import specialization
from studio.verdicts import view

register = template.Library()


@register.inclusion_tag("studio/_verdict.html")
def verdict_panel(verdict, title="Verdict", panel_id="", empty="Not evaluated yet."):
    """VERDICT is a verdict's JSON dict (or None: EMPTY is shown)."""
    shown = view(verdict)
    return {
        "v": shown,
        "title": title,
        "panel_id": panel_id,
        "empty": empty,
        "bars": speedup_bars(shown.speedups) if shown else "",
    }


@register.filter
def specialised(verdict):
    """VERDICT is a verdict's JSON dict (or None)."""
    return specialization(verdict)
