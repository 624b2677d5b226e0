"""`{% failure error %}`: a stored error as a sentence to act on, with the raw text folded (studio.failures)."""

from django import template

from studio.failures import explain

register = template.Library()


@register.inclusion_tag("studio/_failure.html")
def failure(error, element_id=""):
    return {"failure": explain(error), "element_id": element_id}
