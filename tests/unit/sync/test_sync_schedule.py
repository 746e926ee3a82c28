"""The schedule's pure rules: which tenant a source runs for, and the order due runs are handed out
in, so that one tenant's many schedules cannot keep another's waiting (issue 26, finding 12)."""

from __future__ import annotations

from sluice.sync.schedule import fair_order, tenant_of


def test_a_tenant_is_the_bases_organization_its_owner_or_the_app():
    assert tenant_of("org", "acme", None) == "org:acme"
    assert tenant_of("personal", "acme", "pia") == "user:pia"
    assert tenant_of("app", None, None) == "app"


def test_due_runs_take_turns_across_tenants():
    busy = [("org:acme", f"a{i}") for i in range(100)]
    others = [("org:globex", "g0"), ("user:pia", "p0"), ("user:pia", "p1")]
    ordered = [name for _, name in fair_order(busy + others, tenant=lambda item: item[0])]
    # one hundred of acme's first in line, and still globex and pia each start second and third
    assert ordered[:7] == ["a0", "g0", "p0", "a1", "p1", "a2", "a3"]
    assert ordered[7:] == [f"a{i}" for i in range(4, 100)]
    assert fair_order([], tenant=lambda item: item) == []
