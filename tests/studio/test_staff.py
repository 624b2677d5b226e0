"""The staff area's landing page: staff only, with the places for training, synthesis and evaluation runs."""

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db


def test_staff_see_the_admin_landing_with_its_sections(client):
    client.force_login(get_user_model().objects.create_user("root", password="pw", is_staff=True))
    page = client.get("/staff/").content.decode()
    for section in ("operations", "training-runs", "synthesis-runs", "evaluations"):
        assert f'id="{section}"' in page
    assert 'href="/admin/rq/"' in page and 'href="/admin/"' in page
    assert 'href="/staff/">Admin</a>' in client.get("/").content.decode()


def test_a_signed_in_user_who_is_not_staff_is_refused(client):
    client.force_login(get_user_model().objects.create_user("ada", password="pw"))
    assert client.get("/staff/").status_code == 403
    assert "/staff/" not in client.get("/").content.decode()


def test_an_anonymous_visitor_is_sent_to_sign_in(client):
    response = client.get("/staff/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
