"""The home page: only for signed-in users, built on the shared frame with vendored htmx."""

import pytest

pytestmark = pytest.mark.django_db


def test_home_requires_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/"
    login_page = client.get(response["Location"])
    assert login_page.status_code == 200
    assert b'name="password"' in login_page.content


def test_home_renders_for_a_signed_in_user(client, django_user_model):
    user = django_user_model.objects.create_user("ada", password="a long passphrase")
    assert client.login(username="ada", password="a long passphrase")
    response = client.get("/")
    assert response.status_code == 200
    assert [t.name for t in response.templates][:2] == ["studio/home.html", "base.html"]
    assert b"/static/vendor/htmx-2.0.11/htmx.min.js" in response.content
    assert b"/static/css/studio.css" in response.content
    assert f"Sign out {user.username}".encode() in response.content
