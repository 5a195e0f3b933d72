"""Settings refuse a configuration that could never work, with a sentence naming what is missing."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from settings import Settings

QUEUE = "projects/avagenc/locations/asia-southeast1/queues/postera"


def test_a_cloud_tasks_queue_without_a_public_address_is_refused() -> None:
    with pytest.raises(ValidationError, match="CLOUD_TASKS_QUEUE needs PUBLIC_BASE_URL"):
        Settings(
            _env_file=None,  # type: ignore[call-arg]
            cloud_tasks_queue=QUEUE,
            public_base_url=None,
            cloud_tasks_service_account="postera@avagenc.iam.gserviceaccount.com",
        )


def test_a_cloud_tasks_queue_without_a_service_account_is_refused() -> None:
    with pytest.raises(ValidationError, match="CLOUD_TASKS_QUEUE needs CLOUD_TASKS_SERVICE_ACCOUNT"):
        Settings(
            _env_file=None,  # type: ignore[call-arg]
            cloud_tasks_queue=QUEUE,
            public_base_url="https://avagenc.test",
            cloud_tasks_service_account=None,
        )


def test_a_complete_cloud_tasks_configuration_and_none_at_all_are_both_accepted() -> None:
    complete = Settings(
        _env_file=None,  # type: ignore[call-arg]
        cloud_tasks_queue=QUEUE,
        public_base_url="https://avagenc.test",
        cloud_tasks_service_account="postera@avagenc.iam.gserviceaccount.com",
    )
    assert complete.cloud_tasks_queue == QUEUE
    assert Settings(_env_file=None, cloud_tasks_queue=None, public_base_url=None).cloud_tasks_queue is None  # type: ignore[call-arg]


def test_firebase_sign_in_services_are_origins_and_its_methods_known_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    # The addresses go into the app page's CSP connect-src, where only an origin belongs.
    with pytest.raises(ValidationError, match="firebase_auth_url"):
        Settings(_env_file=None, firebase_auth_url="https://identitytoolkit.googleapis.com/v1")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="firebase_providers"):
        Settings(_env_file=None, firebase_providers=["facebook.com"])  # type: ignore[call-arg, list-item]
    monkeypatch.setenv("FIREBASE_PROVIDERS", '["password"]')
    monkeypatch.setenv("FIREBASE_AUTH_URL", "http://127.0.0.1:9099")
    configured = Settings(_env_file=None)  # type: ignore[call-arg]
    assert configured.firebase_providers == ["password"]
    assert configured.firebase_auth_url == "http://127.0.0.1:9099"
