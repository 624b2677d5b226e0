"""Sign-up with Django's auth: an account signed in at once, errors beside their fields, and KS_SIGNUP=off closes it."""

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured

from studio.lib.env import env_switch

pytestmark = pytest.mark.django_db


def test_a_new_person_signs_up_and_lands_signed_in(client):
    response = client.post(
        "/accounts/signup",
        {"username": "grace", "password1": "a-long passphrase 91", "password2": "a-long passphrase 91"},
    )
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200  # signed in: no redirect to the login page
    assert get_user_model().objects.get(username="grace").is_staff is False


def test_a_weak_password_is_refused_beside_its_field(client):
    response = client.post("/accounts/signup", {"username": "grace", "password1": "123", "password2": "123"})
    page = response.content.decode()
    assert response.status_code == 400 and 'id="id_password2-error"' in page and "too short" in page
    assert not get_user_model().objects.filter(username="grace").exists()


def test_sign_up_turned_off_is_not_offered(client, settings):
    settings.KS_SIGNUP = False
    assert client.get("/accounts/signup").status_code == 404
    assert b"Create an account" not in client.get("/accounts/login/").content


def test_the_switch_takes_on_or_off_only(monkeypatch):
    monkeypatch.setenv("KS_SIGNUP", "off")
    assert env_switch("KS_SIGNUP", True) is False
    monkeypatch.setenv("KS_SIGNUP", "no")
    with pytest.raises(ImproperlyConfigured, match="use 'on' or 'off'"):
        env_switch("KS_SIGNUP", True)
