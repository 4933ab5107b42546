"""``RulePolicy``: the CEL rule is compiled when built (a syntax error names the expression), its
answers match the library's own evaluation case by case, a rule that cannot be evaluated asks,
and it round-trips through ``to_dict``/``from_dict`` inside an ``Agent``."""

from __future__ import annotations

import json

import cel
import pytest

from agent import Agent, MCPToolset, StdioServerInfo
from core.serialization import object_from_dict
from hooks.human_in_the_loop import ConfirmationHook, DurableConfirmationStrategy, RulePolicy
from tests import tools as t

# (rule, tool, args): every case is also evaluated by ``cel.evaluate`` itself.
CASES = [
    ("args.amount > 100", "pay", {"amount": 150}),
    ("args.amount > 100", "pay", {"amount": 100}),
    ("args.amount > 100", "pay", {"amount": 100.5}),
    ("args.amount >= 100.0", "pay", {"amount": 100}),
    ('tool == "pay" && args.currency != "EUR"', "pay", {"currency": "USD"}),
    ('tool == "pay" && args.currency != "EUR"', "refund", {"currency": "USD"}),
    ('tool in ["delete_file", "drop_table"]', "drop_table", {}),
    ('args.path.startsWith("/etc") || args.path.endsWith(".key")', "write", {"path": "/home/a.key"}),
    ('args.path.matches("^/tmp/[a-z]+$")', "write", {"path": "/tmp/abc"}),
    ("size(args.recipients) > 2", "mail", {"recipients": ["a", "b", "c"]}),
    ('args.recipients.exists(r, r.endsWith("@external.example"))', "mail", {"recipients": ["x@corp.example"]}),
    ('args.recipients.all(r, r.contains("@"))', "mail", {"recipients": ["x@corp", "y@corp"]}),
    ("has(args.amount) && args.amount > 10", "pay", {}),
    ('"force" in args && args.force', "push", {"force": True}),
    ("args.options.dry_run == false", "deploy", {"options": {"dry_run": False}}),
    ("args.count * 2 > 7 || args.count == 0", "loop", {"count": 3}),
    ("!(args.safe)", "run", {"safe": True}),
]


@pytest.mark.parametrize(("rule", "tool", "args"), CASES)
def test_answers_as_the_library_evaluates(rule, tool, args):
    expected = cel.evaluate(rule, {"tool": tool, "args": args})
    assert isinstance(expected, bool)
    assert RulePolicy(rule).should_ask(tool, "", args) is expected


def test_cases_cover_both_answers():
    answers = {cel.evaluate(rule, {"tool": tool, "args": args}) for rule, tool, args in CASES}
    assert answers == {True, False}


@pytest.mark.parametrize("rule", ["args.amount >", "args.amount > > 1", "tool ==", "args.(x)"])
def test_syntax_error_is_a_value_error_naming_the_rule(rule):
    with pytest.raises(ValueError, match="not valid CEL") as caught:
        RulePolicy(rule)
    assert repr(rule) in str(caught.value)


@pytest.mark.parametrize("rule", ["", "   ", None, 3])
def test_empty_or_non_text_rule_is_refused(rule):
    with pytest.raises(ValueError, match="non-empty CEL expression"):
        RulePolicy(rule)


def test_agent_with_a_bad_rule_fails_where_it_is_built():
    with pytest.raises(ValueError, match="'args.amount >' is not valid CEL"):
        Agent(
            model="m",
            tools=[t.add],
            hooks={
                "before_tool": [ConfirmationHook({"add": DurableConfirmationStrategy(RulePolicy("args.amount >"))})]
            },
        )


@pytest.mark.parametrize(
    ("rule", "args"),
    [
        ("args.amount > 100", {}),  # a missing argument
        ('args.amount > "100"', {"amount": 5}),  # a comparison CEL refuses
        ("args.amount", {"amount": 5}),  # not a bool
        ("user == 1", {}),  # a variable a rule cannot read
    ],
)
def test_a_rule_that_cannot_be_evaluated_asks(rule, args, caplog):
    assert RulePolicy(rule).should_ask("pay", "", args) is True
    assert "so a person is asked" in caplog.text


def test_round_trips_inside_an_agent():
    policy = RulePolicy('tool == "add" && args.a > 1')
    hook = ConfirmationHook({"*": DurableConfirmationStrategy(policy)})
    agent = Agent(model="m", tools=[t.add], hooks={"before_tool": [hook]})
    data = agent.to_dict()
    back = object_from_dict(policy.to_dict())
    assert isinstance(back, RulePolicy) and back.ask_when == policy.ask_when
    assert back.to_dict() == policy.to_dict()
    assert policy.to_dict() == {
        "type": "hooks.human_in_the_loop.rules.RulePolicy",
        "init_parameters": {"ask_when": 'tool == "add" && args.a > 1'},
    }
    assert 'tool == \\"add\\" && args.a > 1' in json.dumps(data)


def rule_hook(rules: dict) -> ConfirmationHook:
    return ConfirmationHook({key: DurableConfirmationStrategy(RulePolicy(rule)) for key, rule in rules.items()})


def test_a_rule_reading_an_argument_its_tool_lacks_fails_where_the_agent_is_built():
    """Issue 30: a misspelled argument built, then asked on every call, said only in a worker log."""
    with pytest.raises(ValueError) as built:
        Agent(model="m", tools=[t.add, t.echo], hooks={"before_tool": [rule_hook({"add": "args.amout > 100"})]})
    assert str(built.value) == (
        "RulePolicy rule 'args.amout > 100' for tool 'add' reads args.amout, which 'add' does not take; "
        "its arguments are: a, b."
    )
    with pytest.raises(ValueError) as built:
        Agent(model="m", tools=[t.add, t.echo], hooks={"before_tool": [rule_hook({"*": 'args["amout"] > 1'})]})
    assert str(built.value) == (
        "RulePolicy rule 'args[\"amout\"] > 1' for '*' reads args.amout, which none of the tools it covers takes; "
        "their arguments are: add (a, b), echo (text)."
    )
    with pytest.raises(ValueError, match=r"reads args.forse, which 'echo' does not take"):
        Agent(model="m", tools=[t.echo], hooks={"before_tool": [rule_hook({("echo",): '"forse" in args'})]})


@pytest.mark.parametrize(
    "rules",
    [
        {"add": "args.a > 100 && has(args.b)"},
        {"*": "has(args.text) && args.text.startsWith('/')"},  # one covered tool takes it: the others ask
        {"add": "args.a > 1", "*": 'tool == "echo" && args.text == "x"'},
        {"*": "args.anything > 1", "extra": "args.whatever"},  # 'extra' is an MCP tool: unknown until a run lists it
    ],
)
def test_rules_whose_arguments_exist_or_cannot_be_known_yet_build(rules):
    tools = [t.add, t.echo, MCPToolset(StdioServerInfo(command="some-mcp-server"))]
    Agent(model="m", tools=tools, hooks={"before_tool": [rule_hook(rules)]})
