"""The `PeopleStore` port's contract: `People` (PostgreSQL) and `MemoryPeople`."""

from __future__ import annotations

from tests.contract.conftest import Stores


async def test_the_same_name_signs_back_in_to_the_same_person(stores: Stores) -> None:
    budi, created = await stores.people.sign_in_local("  Budi   Santoso ")
    again, created_again = await stores.people.sign_in_local("budi santoso")
    assert (created, created_again) == (True, False)
    assert again == budi
    assert budi.name == "Budi Santoso" and budi.id.startswith("usr_") and budi.time_zone == "UTC"
    assert budi.created_at.tzinfo is not None
    other, created_other = await stores.people.sign_in_local("Sari")
    assert created_other and other.id != budi.id


async def test_people_are_found_by_id_and_by_name(stores: Stores) -> None:
    budi, _ = await stores.people.sign_in_local("Budi")
    assert await stores.people.get(budi.id) == budi
    assert await stores.people.find_local("BUDI") == budi
    assert await stores.people.get("usr_nobody") is None
    assert await stores.people.find_local("Nobody") is None


async def test_the_zone_a_device_reports_is_remembered(stores: Stores) -> None:
    budi, _ = await stores.people.sign_in_local("Budi")
    await stores.people.remember_time_zone(budi.id, "Asia/Jakarta")
    found = await stores.people.get(budi.id)
    assert found is not None and found.time_zone == "Asia/Jakarta"


async def test_the_language_is_learned_from_what_the_person_writes(stores: Stores) -> None:
    budi, _ = await stores.people.sign_in_local("Budi")
    assert budi.language == "en"
    await stores.people.learn_language(budi, "tolong nyalakan lampu kamar tidur")
    found = await stores.people.get(budi.id)
    assert found is not None and found.language == "id"
    await stores.people.learn_language(found, "ok")  # too short to tell
    same = await stores.people.get(budi.id)
    assert same is not None and same.language == "id"
    await stores.people.learn_language(same, "please turn off the bedroom light")
    back = await stores.people.get(budi.id)
    assert back is not None and back.language == "en"
