"""The Content-Security-Policy header of every response: what the studio's own pages load (scripts and styles
from our origin, Monaco's workers, the run's WebSocket) and nothing from anywhere else."""

from asgiref.sync import iscoroutinefunction
from django.core.exceptions import DisallowedHost
from django.utils.decorators import sync_and_async_middleware

POLICY = {
    "default-src": "'self'",
    # No inline script anywhere: page scripts are files under static/js, data reaches them through json_script.
    "script-src": "'self'",
    # Monaco and htmx insert <style> elements and style attributes; the server-drawn charts carry style attributes.
    "style-src": "'self' 'unsafe-inline'",
    # Monaco's stylesheet draws a few icons from data: URLs, and inlines its icon font (codicons) as one.
    "img-src": "'self' data:",
    "font-src": "'self' data:",
    # Monaco starts its language workers from a blob: URL that loads the vendored worker script.
    "worker-src": "'self' blob:",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}
# django-rq's dashboard (staff only) is a third party's templates: inline scripts and onclick handlers.
INLINE_SCRIPT_PATHS = ("/admin/rq/",)


def policy_for(request) -> str:
    directives = dict(POLICY)
    try:
        host = request.get_host()
    except DisallowedHost:
        host = None  # Django answers 400 anyway; 'self' alone then
    if host:
        # 'self' covers ws: and wss: of our origin only in browsers that follow CSP level 3: say it outright.
        directives["connect-src"] += f" ws://{host} wss://{host}"
    if request.path.startswith(INLINE_SCRIPT_PATHS):
        directives["script-src"] += " 'unsafe-inline'"
    return "; ".join(f"{name} {value}" for name, value in directives.items())


def _with_policy(request, response):
    if "Content-Security-Policy" not in response:
        response["Content-Security-Policy"] = policy_for(request)
    return response


@sync_and_async_middleware
def content_security_policy(get_response):
    """Middleware: add the policy to every response that has none of its own."""
    if iscoroutinefunction(get_response):

        async def middleware(request):
            return _with_policy(request, await get_response(request))
    else:

        def middleware(request):
            return _with_policy(request, get_response(request))

    return middleware
