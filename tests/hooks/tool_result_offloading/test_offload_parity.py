"""Tool-result offloading against Haystack 3.x (haystack-ai, installed for tests only).

- The protocols' defaults: a custom store or policy with no constructor arguments serialises
  and rebuilds with no code of its own, and the protocols still work with ``isinstance``.
- The hook-order rule: the tool activity writes a result itself only when no ``after_tool``
  hook registered before the offload hook reads results (hooks/protocol.py).
- Differential tests on seeded random steps: our ``ToolResultOffloadHook.run`` offloads exactly
  the results Haystack's offloads and rewrites the conversation the same way, apart from the
  store keys/references and the pointer's wording.
"""

from __future__ import annotations

import random
import re
import string
from pathlib import Path
from typing import Any

import pytest
from haystack.components.agents.state.state import State as HState
from haystack.dataclasses import ChatMessage as HMessage
from haystack.dataclasses import ToolCall as HCall
from haystack.hooks.tool_result_offloading import AlwaysOffload as HAlways
from haystack.hooks.tool_result_offloading import FileSystemToolResultStore as HFileSystemStore
from haystack.hooks.tool_result_offloading import NeverOffload as HNever
from haystack.hooks.tool_result_offloading import OffloadOverChars as HOverChars
from haystack.hooks.tool_result_offloading import OffloadPolicy as HOffloadPolicy
from haystack.hooks.tool_result_offloading import ToolResultOffloadHook as HOffloadHook
from haystack.hooks.tool_result_offloading import ToolResultStore as HToolResultStore

from core.messages import ChatMessage, ToolCall
from core.serialization import default_to_dict, object_from_dict
from core.state import State
from hooks.protocol import OffloadsInToolActivity, ReadsToolResults, reads_tool_results
from hooks.tool_result_offloading import (
    OFFLOADED_META_KEY,
    RESULT_STORE_CONTEXT_KEY,
    AlwaysOffload,
    FileSystemToolResultStore,
    NeverOffload,
    OffloadOverChars,
    OffloadPolicy,
    OffloadPolicyBase,
    S3ToolResultStore,
    ToolResultOffloadHook,
    ToolResultStore,
)
from hooks.tool_result_offloading.hooks import fresh_tool_results_start
from tests.offload_support import IgnoresToolResults, redact_secrets
from tests.tools import OffloadLongResultsInTheWorkflow

# -- protocol defaults -------------------------------------------------------------------------

_MEMORY: dict[str, str] = {}


class MemoryStore(ToolResultStore):
    """A custom store with no constructor arguments and no serialisation code of its own."""

    def write(self, *, key: str, content: str) -> str:
        _MEMORY[key] = content
        return f"memory://{key}"

    def read(self, reference: str) -> str:
        return _MEMORY[reference.removeprefix("memory://")]


class OffloadOddLengths(OffloadPolicy):
    """A custom policy with no constructor arguments and no serialisation code of its own."""

    def should_offload(self, tool_name: str, result: str, state: State) -> bool:
        return len(result) % 2 == 1


class DuckPolicy:
    """Not a subclass: the protocols are runtime-checkable, so it still counts as a policy."""

    def should_offload(self, tool_name: str, result: str, state: State) -> bool:
        return True

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DuckPolicy:
        return cls()


class HOffloadOddLengths(HOffloadPolicy):
    """The same custom policy written against Haystack's protocol."""

    def should_offload(self, tool_name: str, result: str, state: Any) -> bool:
        return len(result) % 2 == 1


def test_custom_no_argument_store_serialises_by_default() -> None:
    store = MemoryStore()
    data = store.to_dict()
    assert data == {"type": "tests.hooks.tool_result_offloading.test_offload_parity.MemoryStore", "init_parameters": {}}
    rebuilt = object_from_dict(data)
    assert type(rebuilt) is MemoryStore and rebuilt.to_dict() == data
    assert MemoryStore.from_dict(data).read(rebuilt.write(key="k.txt", content="v")) == "v"
    assert isinstance(store, ToolResultStore) and not isinstance(store, OffloadPolicy)


def test_custom_no_argument_policy_serialises_by_default() -> None:
    policy = OffloadOddLengths()
    data = policy.to_dict()
    assert data == {
        "type": "tests.hooks.tool_result_offloading.test_offload_parity.OffloadOddLengths",
        "init_parameters": {},
    }
    rebuilt = object_from_dict(data)
    assert type(rebuilt) is OffloadOddLengths and rebuilt.should_offload("t", "abc", State())
    assert isinstance(policy, OffloadPolicy) and not isinstance(policy, ToolResultStore)
    # The same shape Haystack's protocol default gives its own no-argument policy.
    theirs = HOffloadOddLengths().to_dict()
    assert set(theirs) == set(data) and theirs["init_parameters"] == data["init_parameters"] == {}


def test_hook_with_custom_store_and_policy_round_trips() -> None:
    hook = ToolResultOffloadHook(MemoryStore(), {"*": OffloadOddLengths(), "x": DuckPolicy()})
    data = hook.to_dict()
    assert data["init_parameters"]["store"] == MemoryStore().to_dict()
    rebuilt = object_from_dict(data)
    assert type(rebuilt.store) is MemoryStore
    assert type(rebuilt.policy_for("y")) is OffloadOddLengths and type(rebuilt.policy_for("x")) is DuckPolicy
    assert rebuilt.to_dict() == data


def test_protocols_stay_runtime_checkable() -> None:
    assert isinstance(DuckPolicy(), OffloadPolicy)
    assert not isinstance(object(), OffloadPolicy) and not isinstance(object(), ToolResultStore)
    for store in (FileSystemToolResultStore("/tmp/x"), S3ToolResultStore("bkt")):
        assert isinstance(store, ToolResultStore)
    for policy in (AlwaysOffload(), NeverOffload(), OffloadOverChars(3), OffloadLongResultsInTheWorkflow()):
        assert isinstance(policy, OffloadPolicy)
    assert issubclass(OffloadPolicyBase, OffloadPolicy) and issubclass(S3ToolResultStore, ToolResultStore)
    # Ready-made classes keep their own serialisation.
    assert OffloadOverChars(7).to_dict()["init_parameters"] == {"threshold": 7}
    assert object_from_dict(FileSystemToolResultStore("/r", run_id="a").to_dict()).run_id == "a"


def test_ready_made_policies_serialise_like_haystacks() -> None:
    pairs = [(AlwaysOffload(), HAlways()), (NeverOffload(), HNever()), (OffloadOverChars(12), HOverChars(12))]
    for ours, theirs in pairs:
        assert type(ours).__name__ == type(theirs).__name__
        assert ours.to_dict()["init_parameters"] == theirs.to_dict()["init_parameters"]
        assert HOffloadPolicy in type(theirs).__mro__  # Haystack's protocol is a base class, not runtime-checkable
    assert (
        FileSystemToolResultStore("/r").to_dict()["init_parameters"]["root"]
        == HFileSystemStore("/r").to_dict()["init_parameters"]["root"]
    )
    assert HToolResultStore in HFileSystemStore.__mro__


# -- the hook-order rule -----------------------------------------------------------------------


class _Info:
    workflow_id = "run-order"


@pytest.fixture
def in_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """activity_offload scopes the store to the run's workflow id; stand in for a workflow's info."""
    monkeypatch.setattr("hooks.tool_result_offloading.hooks.workflow.info", lambda: _Info())


class SaysItReads:
    reads_tool_results = True

    def run(self, state: State) -> None: ...


class Unsure:
    reads_tool_results = 0  # only an explicit False declares a hook result-blind

    def run(self, state: State) -> None: ...


def test_reads_tool_results_is_conservative() -> None:
    assert reads_tool_results(redact_secrets)  # a function hook cannot declare anything
    assert reads_tool_results(object()) and reads_tool_results(SaysItReads()) and reads_tool_results(Unsure())
    assert not reads_tool_results(IgnoresToolResults())
    assert isinstance(IgnoresToolResults(), ReadsToolResults) and not isinstance(redact_secrets, ReadsToolResults)
    hook = ToolResultOffloadHook(MemoryStore(), {"*": AlwaysOffload()})
    assert reads_tool_results(hook) and isinstance(hook, OffloadsInToolActivity)


def test_activity_offloads_only_when_no_earlier_hook_reads_results(in_a_run: None, tmp_path: Path) -> None:
    state = State(data={"messages": [], "step_count": 2, "hook_context": {}})
    hook = ToolResultOffloadHook(
        FileSystemToolResultStore(tmp_path), {"*": OffloadOverChars(10), "s": OffloadLongResultsInTheWorkflow()}
    )
    first = hook.activity_offload(state, "t", "c1", 0)
    assert first is not None and first.key == "step-2/t/c1.txt"
    assert first.store["init_parameters"] == {"root": str(tmp_path), "run_id": "run-order"}
    assert hook.activity_offload(state, "t", "c1", 0, hooks_before=[IgnoresToolResults()]) == first
    for before in ([redact_secrets], [IgnoresToolResults(), SaysItReads()], [Unsure()], [hook]):
        assert hook.activity_offload(state, "t", "c1", 0, hooks_before=before) is None
    assert hook.activity_offload(state, "s", "c1", 0) is None  # the policy needs State: the hook's turn


# -- differential tests against Haystack -------------------------------------------------------

TOOLS = ["search", "read_file", "list_dir", "get_time", "fetch"]
ALPHABET = string.ascii_letters + string.digits + " \n\t.,;:'\"{}[]é✓—"
SEEDS = range(400)


class OffloadFromStep:
    """A state-aware policy both hooks can call (Haystack passes keywords, we pass positions)."""

    def __init__(self, step: int) -> None:
        self.step = step

    def should_offload(self, tool_name: str, result: str, state: Any) -> bool:
        return state.data.get("step_count", 0) >= self.step

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, step=self.step)


def random_policies(rng: random.Random) -> tuple[Any, Any]:
    """The same policy for both hooks: (ours, Haystack's)."""
    kind = rng.choice(["always", "never", "over", "over", "step"])
    if kind == "always":
        return AlwaysOffload(), HAlways()
    if kind == "never":
        return NeverOffload(), HNever()
    if kind == "over":
        threshold = rng.choice([0, 1, 10, 50, 120, 400])
        return OffloadOverChars(threshold), HOverChars(threshold)
    policy = OffloadFromStep(rng.randint(0, 4))
    return policy, policy


def random_strategies(rng: random.Random) -> tuple[dict, dict]:
    ours: dict[Any, Any] = {}
    theirs: dict[Any, Any] = {}
    names = rng.sample(TOOLS, rng.randint(0, 3))
    keys: list[Any] = list(names)
    if rng.random() < 0.5:
        keys.append(tuple(rng.sample(TOOLS, rng.randint(1, 3))))
    if rng.random() < 0.6:
        keys.append("*")
    rng.shuffle(keys)
    for key in keys:
        ours[key], theirs[key] = random_policies(rng)
    return ours, theirs


def random_text(rng: random.Random) -> str:
    length = rng.choice([0, 0, 1, 5, 10, 11, 49, 50, 51, 119, 120, 121, 300, 401, 1500])
    return "".join(rng.choice(ALPHABET) for _ in range(length))


def random_step(rng: random.Random) -> tuple[list[ChatMessage], int]:
    """A conversation ending with one step's tool results (or, sometimes, not ending with any)."""
    messages = [ChatMessage.from_user("go " * rng.randint(1, 5))]
    number = 0
    for _ in range(rng.randint(0, 2)):  # earlier steps: never touched
        number += 1
        old = ToolCall(tool_name=rng.choice(TOOLS), arguments={"n": number}, id=f"old{number}")
        messages += [ChatMessage.from_assistant(tool_calls=[old]), ChatMessage.from_tool("o" * 600, origin=old)]
    calls = []
    for position in range(rng.randint(1, 5)):
        number += 1
        call_id = None if rng.random() < 0.2 else f"c{number}"
        calls.append(ToolCall(tool_name=rng.choice(TOOLS), arguments={"p": position}, id=call_id))
    messages.append(ChatMessage.from_assistant("thinking" if rng.random() < 0.3 else None, tool_calls=calls))
    for origin in calls:
        meta: dict[str, Any] = {"source": origin.tool_name} if rng.random() < 0.3 else {}
        if rng.random() < 0.1:
            meta[OFFLOADED_META_KEY] = ["elsewhere"]
        messages.append(ChatMessage.from_tool(random_text(rng), origin=origin, error=rng.random() < 0.15, meta=meta))
    if rng.random() < 0.08:
        messages.append(ChatMessage.from_assistant("no fresh results"))
    return messages, rng.randint(0, 5)


def to_haystack(messages: list[ChatMessage]) -> list[HMessage]:
    def hcall(c: ToolCall) -> HCall:
        return HCall(tool_name=c.tool_name, arguments=dict(c.arguments), id=c.id)

    out = []
    for m in messages:
        meta = dict(m.meta)
        if m.tool_call_result is not None:
            r = m.tool_call_result
            out.append(HMessage.from_tool(r.result, origin=hcall(r.origin), error=r.error, meta=meta))
        elif m.role.value == "user":
            out.append(HMessage.from_user(m.text, meta=meta))
        else:
            out.append(HMessage.from_assistant(m.text, tool_calls=[hcall(c) for c in m.tool_calls], meta=meta))
    return out


OUR_POINTER = re.compile(
    r"Tool result offloaded: (\d+) characters at '<ref>'\. "
    r"Read it with read_tool_result\(reference, start/end or start_line/end_line\)\. Preview: (.*)\Z",
    re.DOTALL,
)
THEIR_POINTER = re.compile(
    r"Tool result offloaded to text \((\d+) characters\) at '<ref>'\. Preview: (.*)\Z", re.DOTALL
)


def view(message: Any, pointer: re.Pattern[str], read: Any) -> tuple:
    """What must match between our message and Haystack's, with the reference taken out: role,
    text, tool calls, result origin and error, meta apart from the marker, and for an offloaded
    result the character count, the preview and the content read back from the store."""
    calls = tuple((c.tool_name, c.id, tuple(sorted(c.arguments.items()))) for c in message.tool_calls)
    result = message.tool_call_result
    meta = {k: v for k, v in message.meta.items() if k != OFFLOADED_META_KEY}
    references = message.meta.get(OFFLOADED_META_KEY)
    if result is None:
        return (message.role.value, message.text, calls, meta)
    origin = (result.origin.tool_name, result.origin.id, tuple(sorted(result.origin.arguments.items())))
    text = result.result
    if references and references != ["elsewhere"]:
        (reference,) = references
        match = pointer.match(text.replace(reference, "<ref>"))
        assert match is not None, text
        text = ("offloaded", int(match[1]), match[2], read(reference))
    return ("tool", text, origin, result.error, meta, bool(references))


def run_both(seed: int, root: Path) -> tuple[list[tuple], list[tuple], dict[str, int]]:
    rng = random.Random(seed)
    messages, step = random_step(rng)
    our_strategies, their_strategies = random_strategies(rng)
    preview = rng.choice([0, 1, 7, 20, 200, 1000])
    per_run = rng.random() < 0.25
    ours_root, theirs_root = root / "ours", root / "theirs"
    ours = ToolResultOffloadHook(
        FileSystemToolResultStore(ours_root / "default"), our_strategies, preview_chars=preview
    )
    theirs = HOffloadHook(HFileSystemStore(theirs_root / "default"), their_strategies, preview_chars=preview)
    our_context = {RESULT_STORE_CONTEXT_KEY: FileSystemToolResultStore(ours_root / "run").to_dict()} if per_run else {}
    their_context = {RESULT_STORE_CONTEXT_KEY: HFileSystemStore(theirs_root / "run")} if per_run else {}

    our_state = State(data={"messages": list(messages), "step_count": step, "hook_context": our_context})
    their_data = {"messages": to_haystack(messages), "step_count": step, "hook_context": their_context}
    their_state = HState(schema={}, data=their_data)
    ours.run(our_state)
    theirs.run(their_state)

    store_name = "run" if per_run else "default"
    our_store = FileSystemToolResultStore(ours_root / store_name)
    their_store = HFileSystemStore(theirs_root / store_name)
    our_view = [view(m, OUR_POINTER, our_store.read) for m in our_state.data["messages"]]
    their_view = [view(m, THEIR_POINTER, their_store.read) for m in their_state.data["messages"]]
    fresh = [m.tool_call_result for m in messages[fresh_tool_results_start(messages) :]]
    counts = {
        "results": len(fresh),
        "offloaded": sum(1 for v in our_view if v[0] == "tool" and isinstance(v[1], tuple)),
        "errors": sum(1 for r in fresh if r.error),
        "id_less": sum(1 for r in fresh if r.origin.id is None),
        "per_run": int(per_run),
    }
    # Nothing went to the store the run does not use.
    unused = "default" if per_run else "run"
    assert not (ours_root / unused).exists() and not (theirs_root / unused).exists()
    return our_view, their_view, counts


@pytest.mark.parametrize("chunk", range(8))
def test_same_decisions_and_messages_as_haystack(chunk: int, tmp_path: Path) -> None:
    totals = dict.fromkeys(["cases", "results", "offloaded", "errors", "id_less", "per_run"], 0)
    for seed in SEEDS[chunk::8]:
        our_view, their_view, counts = run_both(seed, tmp_path / str(seed))
        assert our_view == their_view, f"seed {seed}"
        totals["cases"] += 1
        for key, value in counts.items():
            totals[key] += value
    print(f"chunk {chunk}: {totals}")
    assert totals["cases"] == 50 and 0 < totals["offloaded"] < totals["results"] and totals["per_run"] > 0


@pytest.mark.parametrize("seed", range(20))
def test_policies_decide_like_haystacks(seed: int) -> None:
    rng = random.Random(seed)
    threshold = rng.randint(0, 200)
    ours = [AlwaysOffload(), NeverOffload(), OffloadOverChars(threshold)]
    theirs = [HAlways(), HNever(), HOverChars(threshold)]
    for _ in range(50):
        text = random_text(rng)
        name = rng.choice(TOOLS)
        got = [p.should_offload(name, text, State()) for p in ours]
        want = [p.should_offload(tool_name=name, result=text, state=HState(schema={})) for p in theirs]
        assert got == want
