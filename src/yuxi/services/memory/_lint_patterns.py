"""The content rules of the memory lint: ``secret_like`` and ``injection_like`` (pure, no I/O).

Each rule is one precompiled pattern (plus, where a pattern alone would flag ordinary text, one
check of what it matched) with a short name that the finding's message uses. Rules run on
:func:`~yuxi.utils.unicode_fold.fold_compat` text, so full-width lookalikes and invisible
characters do not hide anything. A finding never quotes the matched text: the point of
``secret_like`` is that the secret should not be shown around again.

Precision matters as much as recall: the lint is shown to the owner next to ordinary facts, and
a warning on "token economy", "密码学" or an order number would teach them to ignore it. The unit
corpus (``tests/unit/test_memory_lint.py``) pins both sides.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

from yuxi.utils.prompt_framing import find_markup
from yuxi.utils.unicode_fold import fold_compat

__all__ = ["RANDOM_KEY_KIND", "held_secret_kinds", "injection_kinds", "secret_kinds"]

_I = re.IGNORECASE


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    #: Extra check of one match; the rule fires when any match passes (no check: any match).
    accept: Callable[[re.Match[str]], bool] | None = None


def _kinds(rules: tuple[_Rule, ...], text: str) -> list[str]:
    found: list[str] = []
    for rule in rules:
        if rule.kind in found:
            continue
        for match in rule.pattern.finditer(text):
            if rule.accept is None or rule.accept(match):
                found.append(rule.kind)
                break
    return found


# -- secret_like --------------------------------------------------------------------------------

#: Not preceded by a token character: "task-…", "desk-…" never start an ``sk-`` key.
_B = r"(?<![A-Za-z0-9_\-])"
#: The random part of a prefixed key contains a digit (a 20+ character random string without
#: one is rare; "sk-learn-tutorial-for-beginners" is not a key).
_D = r"(?=[A-Za-z_\-]*[0-9])"
_API_KEY = re.compile(
    _B + r"(?:sk-(?:proj-|ant-|live-|test-)?" + _D + r"[A-Za-z0-9_\-]{16,}"
    r"|(?:sk|rk|pk)_(?:live|test)_" + _D + r"[A-Za-z0-9]{16,}"
    r"|gh[pousr]_" + _D + r"[A-Za-z0-9]{20,}"
    r"|github_pat_" + _D + r"[A-Za-z0-9_]{20,}"
    r"|glpat-" + _D + r"[A-Za-z0-9_\-]{20,}"
    r"|(?:AKIA|ASIA)" + _D + r"[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"|xox[abposr]-" + _D + r"[A-Za-z0-9\-]{10,}"
    r"|AIza" + _D + r"[A-Za-z0-9_\-]{35})"
)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")
_BEARER = re.compile(r"\bbearer\s+(?=[A-Za-z._~+/\-]*[0-9])[A-Za-z0-9._~+/\-]{16,}", _I)
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY")
#: "api_key = …", "client secret: …": a named credential assigned a long value with a digit.
_ASSIGNED = re.compile(
    r"(?<![a-z])(?:api[ _\-]?key|secret(?:[ _\-]?key)?|access[ _\-]?(?:key|token)|auth[ _\-]?token"
    r"|client[ _\-]?secret|token)\s*[:=]\s*['\"]?" + _D + r"[A-Za-z0-9_\-.+/=]{12,}",
    _I,
)

# A password: a keyword, a separator, a value. English reads like prose as often as not ("the
# password is required", "password: stored in Bitwarden"), so the value must be quoted or carry a
# digit or a symbol — or, after ":" or "=", stand alone at the end of its line ("password:
# swordfish"). Chinese keywords exclude the words that merely start with them (密码学
# cryptography, 密码锁 combination lock, …), and the value must be ASCII: "忘记密码是常见问题"
# states no password. A PIN is digits.
_PASSWORD = re.compile(
    r"(?<![a-z])(?:password|passwd|passphrase|pwd|pass ?code|pin ?code)(?![a-z])"
    r"(?:[^\S\n]+(?:for|of|to|on)(?:[^\S\n]+[^\s:=]+){1,2}?)?"
    r"(?:[^\S\n]*(?P<sep>[:=])|[^\S\n]+is(?=[^\S\n]))[^\S\n]*(?P<value>\S+)(?P<rest>[^\n]*)",
    _I,
)
_PASSWORD_ZH = re.compile(
    r"(?:密码|口令|密钥|PIN码)(?!学|术|锁|箱|本|器|机|技|算|体|子)[^\S\n]*(?:是|为|:|=)[^\S\n]*"
    r"[!-~]{4,}",
    _I,
)
_PIN = re.compile(r"(?<![a-z])pin\s*[:=]\s*[0-9]{4,8}(?![0-9])", _I)
_QUOTES = "'\"“”‘’`"


def _password_value(match: re.Match[str]) -> bool:
    value = match["value"]
    if value[0] in _QUOTES:
        return len(value.strip(_QUOTES + ".,;!?")) >= 3
    bare = value.rstrip(".,;!?")
    if len(bare) < 4 or not bare.isascii() or not bare.isprintable():
        return False
    if not bare.isalpha():
        return True
    return bool(match["sep"]) and not match["rest"].strip()


# A payment card: 13-19 digits, contiguous or grouped as printed (4-4-4-4[-x], 4-6-5/4), starting
# with a digit an issuer uses (2-6: Mastercard, Amex, Visa, Discover, UnionPay, JCB — this leaves
# out ms timestamps and ISBNs), passing the Luhn check. Dates and phone numbers are not grouped so.
# The digits stand on their own: a digit run inside a hex id or a token ("f6228496572249269a…")
# is part of that, not a card.
_CARD = re.compile(
    r"(?<![0-9A-Za-z])(?:[2-6][0-9]{12,18}"
    r"|[2-6][0-9]{3}(?P<s>[ \-])[0-9]{4}(?P=s)[0-9]{4}(?P=s)[0-9]{1,7}"
    r"|[2-6][0-9]{3}(?P<t>[ \-])[0-9]{6}(?P=t)[0-9]{4,5})(?![0-9A-Za-z])"
)


def luhn_valid(digits: str) -> bool:
    total = 0
    for position, ch in enumerate(reversed(digits)):
        value = int(ch)
        if position % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card_number(match: re.Match[str]) -> bool:
    digits = match[0].replace(" ", "").replace("-", "")
    return 13 <= len(digits) <= 19 and luhn_valid(digits)


# A long random-looking run: 32+ hex digits (a 128-bit key or more), or 32+ characters of the
# base64 alphabets whose letters and digits mix the way random text does: all of upper case,
# lower case and digits, with at least 45% of neighbouring letters/digits changing class (random
# base64 ≈ 64%, so some 97% of 32+ character keys are caught; paths, CamelCase and snake_case
# names stay below 40%), and at least 3.5 bits of entropy per character (no "aB3aB3…").
_RUN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/_\-]{32,}={0,2}")
_HEX = re.compile(r"[0-9a-fA-F]{32,}")


def _char_class(ch: str) -> int:
    return 0 if ch.isdigit() else 1 if ch.isupper() else 2


def _random_looking(match: re.Match[str]) -> bool:
    run = match[0].rstrip("=")
    if _HEX.fullmatch(run):
        return any(ch.isdigit() for ch in run) and any(ch.isalpha() for ch in run)
    classes = [_char_class(ch) for ch in run if ch.isalnum()]  # "_" in snake_case is no mix
    if not {0, 1, 2} <= set(classes):
        return False
    changes = sum(a != b for a, b in pairwise(classes))
    if changes * 20 < 9 * (len(classes) - 1):
        return False
    counts = Counter(run)
    entropy = -sum(n / len(run) * math.log2(n / len(run)) for n in counts.values())
    return entropy >= 3.5


# A URL that carries a password: ``scheme://user:password@host`` (database and broker connection
# strings, ``https://user:pass@host``). Without a password (``postgres://localhost/dev``,
# ``ssh://git@host``) it is an address, not a credential. A password that is visibly not one —
# masked (``***``, ``xxx``, ``•••``) or a template variable (``${DB_PASSWORD}``, ``$PGPASS``,
# ``{password}``, ``<password>``, ``%s``) — is not flagged; any other value is, however short:
# ``mysql://u:p@h`` is the form a real credential takes, and a placeholder that looks like a
# real one (``user:pass``) reads to a model provider exactly as a real one would.
_CREDENTIAL_URL = re.compile(
    r"(?<![A-Za-z0-9+.\-])[a-z][a-z0-9+.\-]{0,30}://[^\s:/@?#]*:(?P<password>[^\s/@?#]+)@"
    r"(?=[A-Za-z0-9\[])",
    _I,
)
_NOT_A_PASSWORD = re.compile(
    r"\*+|x{3,}|•+|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\{\{?[^}]*\}?\}|<[^>]*>|%s|\[[^\]]*\]", _I
)


def _real_password(match: re.Match[str]) -> bool:
    return _NOT_A_PASSWORD.fullmatch(match["password"]) is None


#: The one secret kind that is a guess from the look of a string, not from the shape a
#: credential has (a prefix, a structure, a keyword): it also fits ids, hashes and commit SHAs.
RANDOM_KEY_KIND = "a long random key"

_SECRET_RULES = (
    _Rule("an API key", _API_KEY),
    _Rule("a connection URL with a password", _CREDENTIAL_URL, _real_password),
    _Rule("a JSON web token", _JWT),
    _Rule("a bearer token", _BEARER),
    _Rule("a private key", _PRIVATE_KEY),
    _Rule("a credential", _ASSIGNED),
    _Rule("a password", _PASSWORD, _password_value),
    _Rule("a password", _PASSWORD_ZH),
    _Rule("a password", _PIN),
    _Rule("a card number", _CARD, _card_number),
    _Rule(RANDOM_KEY_KIND, _RUN, _random_looking),
)


def secret_kinds(text: str) -> list[str]:
    """What in ``text`` looks like a credential or card number (kinds, in rule order)."""
    return _kinds(_SECRET_RULES, fold_compat(text))


def held_secret_kinds(text: str) -> list[str]:
    """The kinds of :func:`secret_kinds` that hold a memory write for the user's approval: all
    but :data:`RANDOM_KEY_KIND`. Holding every write that names a commit SHA or a request id
    would teach the user to approve without reading; the lint still flags those afterwards."""
    return [kind for kind in secret_kinds(text) if kind != RANDOM_KEY_KIND]


# -- injection_like -----------------------------------------------------------------------------

_PRIOR = r"(?:previous|prior|above|earlier|preceding|foregoing|original|system|developer|safety)"
_ORDERS = (
    r"(?:instructions?|prompts?|rules?|directions?|guidelines?|guidance|constraints?"
    r"|messages?|context|commands?|orders?|directives?|policies|policy)"
)
_IGNORE_EN = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|every|of|the|your|my|these"
    r"|those)\s+)*" + _PRIOR + r"\s+(?:\w+\s+){0,2}?" + _ORDERS + r"\b"
    # "disregard the above", "ignore everything above"; "ignore previous." with nothing after
    r"|\b(?:ignore|disregard)\s+(?:(?:all|everything|anything|of|the)\s+)*above\b"
    r"|\b(?:ignore|disregard)\s+(?:(?:all|everything|of|the)\s+)*(?:previous|prior|preceding)\b"
    r"(?!\s+\w)",
    _I,
)
_ROLE_EN = re.compile(
    r"\byou\s+are\s+now\s+(?:a|an|the|my|in|no\s+longer|acting|free|allowed|unrestricted"
    r"|jailbroken|dan|developer|god)\b"
    r"|\b(?:from\s+now\s+on|henceforth)\s*,?\s*(?:you|the\s+assistant)\s+(?:must|will|should"
    r"|shall|are)\b",
    _I,
)
_META_EN = re.compile(
    r"\b(?:system|developer)\s+(?:prompts?|instructions?)\b|\bnew\s+instructions?\s*:"
    r"|\b(?:do\s+not|don't|never)\s+(?:tell|inform|warn)\s+the\s+user\b",
    _I,
)
_IGNORE_ZH = re.compile(
    r"(?:忽略|无视|忽视|不要理会|别管|忘记|忘掉)掉?你?"
    r"(?:之前|以前|先前|此前|上面|以上|上述|前面|原来|原有|所有|全部|一切)的?(?:所有|全部|一切)?的?"
    r"(?:指令|指示|提示词?|规则|设定|要求|命令|约束|限制|说明)"
    r"|(?:忽略|无视|忽视)掉?(?:以上|上面|上述)"
)
_ROLE_ZH = re.compile(r"你现在是|从现在(?:开始|起)[,，]?你(?:是|要|必须|将|应该|只能)")
_META_ZH = re.compile(r"系统提示词?|系统指令|不要告诉用户")
_AGENT_TOOLS = (
    r"(?:remember_memory|search_thread_messages|read_thread_messages|list_threads"
    r"|read_workspace_file|write_workspace_file|edit_workspace_file|delegate_to_subagent)"
)
_TOOL_SYNTAX = re.compile(
    r"\b" + _AGENT_TOOLS + r"\s*\("
    r"|[\"']tool_calls?[\"']|\btool_calls?\s*[:=]|\bfunction_call\b"
    r"|[\"']name[\"']\s*:\s*[\"']" + _AGENT_TOOLS + r"[\"']",
    _I,
)
#: Chat-template markup that is not tag-shaped; tags themselves (``</memory_data>``, ``<system>``,
#: ``<|im_start|>``, with every lookalike of ``<``) are the prompt framing's rule, applied below.
_TEMPLATE_MARKUP = re.compile(r"\[/?inst\]|<<\s*/?sys\s*>>", _I)
_MARKUP = "prompt markup"

# Lines that imitate the structure of a prompt. Memory files are Markdown and their owners use
# headings, tags and "Label: value" lines for ordinary facts, so each rule is narrow:
#
# * a heading (``#`` to ``######`` at the start of a line) whose whole text names a prompt
#   section or a role — "## System prompt", "### Instruction:", "# Assistant", "## 新指令". A
#   heading that organises facts ("# Memory", "## Work", "## User", "## Rules I follow") is not
#   flagged, nor is "##" that does not start a heading ("## is how I write headings": the text
#   after it is a sentence, not a section name);
# * an XML-like tag named after a chat role or prompt part — ``<user>``, ``</instructions>``,
#   ``<context>``, ``<start_of_turn>`` (HTML such as ``<b>`` or ``<div>`` is not; the framing's
#   reserved names, ``<system>`` or ``<|im_start|>``, are caught by :func:`find_markup` below);
# * a role marker starting a line (after a list bullet): ``system:``, ``assistant:``,
#   ``developer:``, ``human:`` and 系统：, 助手：. ``user:`` is not one ("user: alice" is a login
#   name). Borderline, and flagged on purpose: "System: Arch Linux" — a role marker is the most
#   common frame of a fake prompt turn, and this is a finding for the owner, never a refusal.
_SECTION = (
    r"(?:new|updated|hidden|secret)\s+rules"
    r"|(?:(?:new|updated|real|actual|hidden|secret|additional|important)\s+)?"
    r"(?:(?:system|developer|assistant)(?:\s+(?:prompts?|instructions?|messages?|rules|role|turn))?"
    r"|(?:user|human)\s+(?:prompts?|instructions?|messages?|turn)"
    r"|instructions?|prompts?|responses?|tool\s+(?:calls?|results?|outputs?)"
    r"|function\s+calls?)"
)
_HEADING = re.compile(
    r"^[^\S\n]{0,3}#{1,6}[^\S\n]+(?:"
    + _SECTION
    + r"|(?:新的?)?(?:系统提示词?|系统指令|指令|提示词)"
    r"|系统|助手)[^\S\n]*:?[^\S\n]*#*[^\S\n]*$",
    _I | re.MULTILINE,
)
_ROLE_TAG = re.compile(
    r"<[^\S\n]*/?[^\S\n]*(?:user|human|assistant|system|developer|model|instructions?|prompts?"
    r"|context|rules|tools?|start_of_turn|end_of_turn)(?:[^\S\n][^<>\n]*)?/?>",
    _I,
)
_ROLE_MARKER = re.compile(
    r"^[^\S\n]*(?:(?:[-*+]|\d{1,9}[.)])[^\S\n]+)?(?:(?:system|assistant|developer|human)[^\S\n]*:"
    r"|(?:系统|助手)[^\S\n]*:)",
    _I | re.MULTILINE,
)

_INJECTION_RULES = (
    _Rule("an instruction to ignore earlier instructions", _IGNORE_EN),
    _Rule("an instruction to ignore earlier instructions", _IGNORE_ZH),
    _Rule("an attempt to give the agent a new role", _ROLE_EN),
    _Rule("an attempt to give the agent a new role", _ROLE_ZH),
    _Rule("text about the agent's own instructions", _META_EN),
    _Rule("text about the agent's own instructions", _META_ZH),
    _Rule("tool-call syntax", _TOOL_SYNTAX),
    _Rule(_MARKUP, _TEMPLATE_MARKUP),
    _Rule("a heading that imitates a prompt section", _HEADING),
    _Rule(_MARKUP, _ROLE_TAG),
    _Rule("a role marker (system:, assistant:)", _ROLE_MARKER),
)


def injection_kinds(text: str) -> list[str]:
    """What in ``text`` reads as an instruction aimed at the agent (kinds, in rule order)."""
    kinds = _kinds(_INJECTION_RULES, fold_compat(text))
    if _MARKUP not in kinds and find_markup(text):
        kinds.append(_MARKUP)
    return kinds
