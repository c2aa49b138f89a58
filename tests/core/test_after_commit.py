"""``queue_after_commit``: a task goes out once its transaction commits, and never for one that
rolled back (run eagerly here, as the demo runs them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from celery import current_app
from django.db import transaction

from gpuplatform.db.after_commit import queue_after_commit

pytestmark = pytest.mark.django_db

received: list[tuple[tuple[object, ...], dict[str, object]]] = []


@current_app.task(name="tests.core.after_commit_probe")
def probe(*args: object, **kwargs: object) -> None:
    received.append((args, kwargs))


@pytest.fixture(autouse=True)
def eager() -> Iterator[None]:
    before = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    received.clear()
    yield
    current_app.conf.task_always_eager = before


def test_the_task_runs_after_the_commit_with_its_arguments(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        queue_after_commit("tests.core.after_commit_probe", "3f2a", batch=2)
        assert received == []  # not before the commit
    assert received == [(("3f2a",), {"batch": 2})]


def test_a_rolled_back_transaction_queues_nothing(django_capture_on_commit_callbacks):
    def change_that_fails() -> None:
        with transaction.atomic():
            queue_after_commit("tests.core.after_commit_probe", "lost")
            raise ValueError("the change is refused")

    with django_capture_on_commit_callbacks(execute=True) as callbacks, pytest.raises(ValueError):
        change_that_fails()
    assert callbacks == [] and received == []
