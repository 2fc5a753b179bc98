"""The checks `tracec check` runs, in order: the one list to extend.

Adding a check: write a :class:`tracec.checks.check.Check` subclass (its ``name``, the
``codes`` it reports, and any of ``start``, ``instance`` and ``finish``), list it here, and
document its codes in docs/checks.md. The order is the order of the report: findings keep the
order of their first report, and every step (start, each instance, finish) runs the checks in
this order.
"""

from __future__ import annotations

from tracec.checks.alike_entries import AlikeEntries
from tracec.checks.ambiguous import Ambiguous
from tracec.checks.answer_order import AnswerOrder
from tracec.checks.answer_position import AnswerPosition
from tracec.checks.answer_writes import AnswerWrites
from tracec.checks.bag_allowance import BagAllowance
from tracec.checks.check import Check
from tracec.checks.correction_values import CorrectionValues
from tracec.checks.declined_replies import DeclinedReplies
from tracec.checks.duration_answer import DurationAnswer
from tracec.checks.env_checks import Determinism, EnvChecker
from tracec.checks.gold_args import GoldArgs
from tracec.checks.hidden_reads import HiddenReads
from tracec.checks.hint_answer import HintAnswer
from tracec.checks.hint_operands import HintOperands
from tracec.checks.hint_raises import HintRaises
from tracec.checks.hint_tools import HintTools
from tracec.checks.hint_words import HintWords
from tracec.checks.inert_forbids import InertForbids
from tracec.checks.ladder_order import LadderOrder
from tracec.checks.ladder_ties import LadderTies
from tracec.checks.meaning import MeaningChecks
from tracec.checks.nested_answer import NestedAnswer
from tracec.checks.noop_writes import NoopWrites
from tracec.checks.ordinal_entry import OrdinalEntry
from tracec.checks.past_times import PastTimes
from tracec.checks.payment_kind import PaymentKind
from tracec.checks.policy_rules import PolicyRules
from tracec.checks.policy_sections import PolicySections
from tracec.checks.probe_checks import ForbidGold, HintLeak, ProbeJudge
from tracec.checks.prompt_complete import PromptComplete
from tracec.checks.provenance import Provenance
from tracec.checks.read_first import ReadFirst
from tracec.checks.refusal_forbids import RefusalForbids
from tracec.checks.refusals import Refusals
from tracec.checks.refused_twins import RefusedTwins
from tracec.checks.repeats import Repeats
from tracec.checks.reply_words import ReplyWords
from tracec.checks.return_refund import ReturnRefund
from tracec.checks.reward_checks import RewardVariance, UnreachedLevels
from tracec.checks.seen_weekday import SeenWeekday
from tracec.checks.shortcut_weekday import ShortcutWeekday
from tracec.checks.signed_answer import SignedAnswer
from tracec.checks.stated_now import StatedNow
from tracec.checks.time_bases import TimeBases
from tracec.checks.time_results import TimeResults
from tracec.checks.tool_agreement import ToolAgreement
from tracec.checks.turn_budget import TurnBudget
from tracec.checks.unsaid_draws import UnsaidDraws
from tracec.checks.user_values import UserValues
from tracec.checks.variance import Variance
from tracec.checks.written_weekday import WrittenWeekday

CHECKS: tuple[type[Check], ...] = (
    # the capability: gymnasium's checker, determinism
    EnvChecker, Determinism,
    # each instance as drawn: its hint, meaning, repeats, then the gold (issue 30)
    HintLeak, MeaningChecks, Repeats, LadderOrder, LadderTies, TurnBudget, Variance, Provenance,
    PromptComplete, HiddenReads,
    # ... the gold against the domain's policy and the answers (issue 30)
    PolicyRules, PolicySections, AnswerWrites, HintAnswer, AnswerOrder,
    # ... the gold against its own arguments, hint, refusals and time tools (issue 30, fresh set)
    GoldArgs, HintTools, Refusals, RefusedTwins, TimeResults, DurationAnswer, NoopWrites,
    Ambiguous,
    # ... declined confirmations, invented corrections, time bases, weekdays, bags (third set)
    DeclinedReplies, CorrectionValues, TimeBases, WrittenWeekday, BagAllowance, ReturnRefund,
    # ... the gold against its hint's counts, the user's words and times; inert forbids (fourth set)
    HintOperands, PaymentKind, NestedAnswer, UserValues, SeenWeekday, InertForbids, OrdinalEntry,
    SignedAnswer, RefusalForbids,
    # ... hints in words, times the gold sets in the past (issue 30, the sets' last misses)
    HintWords, PastTimes, AlikeEntries, ToolAgreement,
    # ... records read before the gold writes them, the current time stated, what replies ask
    ReadFirst, StatedNow, ReplyWords, HintRaises, ShortcutWeekday, UnsaidDraws, AnswerPosition,
    # each instance played: forbids against the gold, every probe's episode judged
    ForbidGold, ProbeJudge,
    # the run's rewards
    RewardVariance, UnreachedLevels,
)

# codes that the runner itself reports, not a check: no task (C100), a reset that fails (C102,
# R100); and `tracec check`'s first-prompt budget (C302, tracec.checks.cli)
RUNNER_CODES = ("C100", "C102", "R100")
