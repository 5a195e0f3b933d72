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
