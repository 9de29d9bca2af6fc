"""The consumer groups panel of a session on a real cluster (issue 31 item 1): what the cluster's AdminClient tells
(DescribeGroups: state, assignor, members with client.id, host, group.instance.id and partitions; OffsetFetch: the
committed offsets), the members named as the session's actors, and a sentence for what a real cluster does not
tell (the generation, the rebalances, offsets pending in a transaction, the KIP-447 checks). Needs a real Kafka
(KAFKA_BOOTSTRAP_SERVERS), as the other real-cluster web tests."""

from __future__ import annotations

import html
import re

import pytest

from playground import session

from .test_kafka_sessions import _new, _ok, _page, _sid, kafka, web  # noqa: F401  (fixtures)


def _panel(page: str) -> str:
    text = html.unescape(re.sub(r"<[^>]+>", " ", page[page.index('id="p-groups"') : page.index('id="h-db"')]))
    return re.sub(r"\s+", " ", text)


@pytest.mark.kafka
def test_it_shows_a_real_cluster_s_group_members_their_partitions_and_its_committed_offsets(kafka, web):  # noqa: F811
    sid = _sid(_new(web, "static-membership"))
    steps = session.load(sid).steps
    upto = next(i for i, s in enumerate(steps) if s.label == "billing.commit")
    for _ in range(upto + 1):
        _ok(web.post(f"/s/{sid}/step/"))
    live = session.load(sid)
    prefix = live.backend.prefix
    page = _page(web, sid)
    raw = page[page.index('id="p-groups"') : page.index('id="h-db"')]
    panel = _panel(page)
    # the member: billing (its client.id is the session's prefix and its name), its instance id, both partitions
    assert re.search(rf'<td title="client.id {re.escape(prefix)}billing · member.id [^"]+"><code>billing</code>', raw)
    assert "billing-1" in panel and "Stable" in panel, panel
    assert "orders-0 orders-1" in panel, panel
    # per partition: its owner, committed 1, nothing pending, billing's position 1, LSO 1, end 1, lag 0
    for tp in ("orders-0", "orders-1"):
        assert f"{tp} billing 1 — 1 billing 1 1 0" in panel, panel
    details = live.backend.view()["group_details"]["billing"]
    assert details["committed"] == {"orders-0": 1, "orders-1": 1}, details
    assert [(m["name"], m["instance_id"], m["assignment"]) for m in details["members"]] == [
        ("billing", "billing-1", ["orders-0", "orders-1"])
    ]
    assert details["generation"] is None and details["source"] == "admin"
    assert not re.search(r"generation \d", panel) and "does not tell a group’s generation" in panel
    assert "coordinator state is not read here" not in panel
