"""`{{ seconds|duration }}`: a time span for people (45 s, 3 min 12 s, 2 h 05 min)."""

from django import template

register = template.Library()


@register.filter
def duration(seconds):
    if seconds is None:
        return "–"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
