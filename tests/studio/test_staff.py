"""The staff area's landing page: staff only, with the places for training, synthesis and evaluation runs and the
studio's data in the Django admin, which every staff member may read."""

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db


def test_staff_see_the_admin_landing_with_its_sections(client):
    client.force_login(get_user_model().objects.create_user("root", password="pw", is_staff=True))
    page = client.get("/staff/").content.decode()
    for section in ("operations", "training-runs", "synthesis-runs", "evaluations"):
        assert f'id="{section}"' in page
    assert 'href="/admin/rq/"' in page and 'href="/admin/"' in page
    # The data it promises, each a link into the Django admin (tests/studio/test_form_errors.py opens them).
    for model in ("problem", "run", "kernelversion", "evaluation"):
        assert f'href="/admin/studio/{model}/"' in page
    assert 'href="/staff/">Admin</a>' in client.get("/").content.decode()


def test_a_signed_in_user_who_is_not_staff_is_refused(client):
    client.force_login(get_user_model().objects.create_user("ada", password="pw"))
    assert client.get("/staff/").status_code == 403
    assert "/staff/" not in client.get("/").content.decode()


def test_an_anonymous_visitor_is_sent_to_sign_in(client):
    response = client.get("/staff/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_any_staff_member_can_look_at_the_studios_data_in_the_admin_but_not_change_it(client):
    from studio.models import Problem

    staff = get_user_model().objects.create_user("root", password="pw", is_staff=True)  # no permission granted
    problem = Problem.objects.create(owner=staff, name="relu", source="#", sha256="0" * 64)
    client.force_login(staff)
    index = client.get("/admin/").content.decode()
    for model in ("problem", "run", "kernelversion", "evaluation"):
        assert f'href="/admin/studio/{model}/"' in index
        assert client.get(f"/admin/studio/{model}/").status_code == 200
    assert client.get(f"/admin/studio/problem/{problem.pk}/change/").status_code == 200  # read-only view
    assert client.post(f"/admin/studio/problem/{problem.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Problem.objects.filter(pk=problem.pk).exists()
