"""Claims → Principal (R-AUTH-1): the shapes API Gateway's JWT authorizer and the local gateway hand over."""

from __future__ import annotations

import pytest

from sluice.errors import UnauthorizedError
from sluice.identity import principal_from_claims, principal_from_event


@pytest.mark.parametrize("permissions", [
    ["collections:view", "secrets:view"],
    "collections:view secrets:view",
    "[collections:view secrets:view]",  # how the authorizer stringifies a list claim
    '["collections:view", "secrets:view"]',
    "collections:view,secrets:view",
])
def test_permissions_arrive_as_a_list_or_a_string(permissions):
    p = principal_from_claims({"sub": "u1", "permissions": permissions})
    assert p.permissions == {"collections:view", "secrets:view"}
    assert p.can("secrets:view") and not p.can("collections:edit")


@pytest.mark.parametrize(("flag", "admin"), [(True, True), ("true", True), ("True", True), (False, False),
                                             ("false", False), (None, False), ("no", False)])
def test_the_app_admin_flag(flag, admin):
    assert principal_from_claims({"sub": "u1", "is_app_admin": flag}).is_app_admin is admin


@pytest.mark.parametrize(("org", "expected"), [("acme", "acme"), ("", None), (None, None), ("null", None)])
def test_the_organization_is_optional(org, expected):
    assert principal_from_claims({"sub": "u1", "org_id": org}).org_id == expected


@pytest.mark.parametrize("claims", [None, {}, {"sub": ""}, {"org_id": "acme"}])
def test_no_subject_is_no_principal(claims):
    with pytest.raises(UnauthorizedError):
        principal_from_claims(claims)


def test_the_claims_are_read_where_the_authorizer_puts_them():
    event = {"requestContext": {"authorizer": {"jwt": {"claims": {"sub": "u9", "org_id": "o", "permissions":
                                                                   "collections:edit"}}}}}
    p = principal_from_event(event)
    assert (p.user_id, p.org_id, p.permissions, p.is_app_admin) == ("u9", "o", {"collections:edit"}, False)
    with pytest.raises(UnauthorizedError):
        principal_from_event({"requestContext": {}})
