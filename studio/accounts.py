"""Sign-up with Django's auth: a username and a password make an account, signed in at once (KS_SIGNUP=off: none)."""

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.forms import UserCreationForm
from django.http import Http404
from django.shortcuts import redirect, render


def signup(request):
    if not settings.KS_SIGNUP:
        raise Http404("sign-up is turned off here (KS_SIGNUP=off): ask staff for an account")
    if request.user.is_authenticated:
        return redirect("home")
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("home")
    return render(request, "registration/signup.html", {"form": form}, status=400 if request.method == "POST" else 200)
