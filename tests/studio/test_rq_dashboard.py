"""/admin/rq/: django-rq's dashboard of the users', staff and learners' queues, for staff only."""

import pytest

pytestmark = pytest.mark.django_db


def test_rq_dashboard_lists_every_queue_for_staff(client, django_user_model):
    assert client.get("/admin/rq/").status_code == 302
    client.force_login(django_user_model.objects.create_user("ops", is_staff=True))
    response = client.get("/admin/rq/")
    assert response.status_code == 200
    assert sorted(queue["name"] for queue in response.context["queues"]) == [
        "cpu",
        "gpu",
        "staff-cpu",
        "staff-gpu",
        "train",
    ]
