"""The one kind of expected failure, and the one way a command reports it (standard library only).

A bad input, a missing file or an unmet precondition is a UserError: the cause in one line, the fix in
another, a non-zero exit, no traceback. Image commands and host tools both end through `run_command`, which also
turns what any input can cause into that form: a file it cannot read or write, text that is not UTF-8, Ctrl-C, and an
output pipe closed early (`| head`). Every command writes its files whole or not at all, and several files all or
none (atomic_write), so none of these leaves a file half-written; on Ctrl-C it names what it had written.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Callable


class UserError(Exception):
    """Expected bad input: what is wrong (cause) and what to do about it (fix)."""

    def __init__(self, cause: str, fix: str, code: int | None = None):
        super().__init__(cause)
        self.cause, self.fix, self.code = cause, fix, code


def escaped(line: str) -> str:
    """`line` with each character Python does not print as itself (fetch.CONTROL's, and every other format or
    separator character) written as a Python string writes it, ESC as \\x1b."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in line)


def report(prog: str, error: UserError) -> None:
    """The two lines of every command's refusal. A control character in them is written escaped: a path or a line of
    input holding ESC or NUL was written raw to the terminal (sweep 11 U3), and a line break split the two lines."""
    print(escaped(f"{prog}: {error.cause}"), file=sys.stderr)
    print(escaped(f"fix: {error.fix}"), file=sys.stderr)


class Finding(str):
    """A problem a check finds, as its cause's line, carrying the fix of that cause (`fix`): a check that finds causes
    of several kinds says for each the one fix that applies, not every fix it knows joined in one line."""

    fix: str

    def __new__(cls, cause: str, fix: str):
        found = super().__new__(cls, cause)
        found.fix = fix
        return found


def report_findings(prefix: str, found: list[str], fix: str) -> None:
    """Each of `found` as `prefix: cause`, each run of causes that share a fix followed by that fix's line: a Finding's
    own, else `fix`, the check's for the causes it names no fix of."""
    fixes = [getattr(cause, "fix", fix) for cause in found]
    for number, cause in enumerate(found):
        print(escaped(f"{prefix}: {cause}"), file=sys.stderr)
        if number + 1 == len(found) or fixes[number + 1] != fixes[number]:
            print(escaped(f"fix: {fixes[number]}"), file=sys.stderr)


STOPS = (signal.SIGTERM, signal.SIGHUP)  # the signals that stop a command as Ctrl-C does, each named as received


@contextlib.contextmanager
def interrupts_held():
    """Ctrl-C and the stop signals inside the block wait for its end, then land as they would have: none falls between
    two renames of one write or inside its cleanup (atomic_write: a SIGTERM there left staged files, sweep 9 F4), nor
    inside a compiled call that cannot take it (the Dockerfile parser, Go code: a SystemError traceback or SIGSEGV)."""
    # Only the main thread may set a handler; one a library set in C (getsignal: None) could not be put back, and one
    # ignored (a background job's Ctrl-C, nohup's SIGHUP) stays ignored.
    main = threading.current_thread() is threading.main_thread()
    held = [s for s in (signal.SIGINT, *STOPS) if main and signal.getsignal(s) not in (None, signal.SIG_IGN)]
    caught: list[int] = []
    previous = {s: signal.signal(s, lambda signum, frame: caught.append(signum)) for s in held}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if caught:
        handler = previous[caught[0]]
        if callable(handler):
            handler(caught[0], None)
        else:  # SIG_DFL: the process ends by it, as it would have
            signal.raise_signal(caught[0])


def interrupt(signum, frame) -> None:
    """Ctrl-C, as the entry points take it (handle_start): KeyboardInterrupt, as Python's own handler raises it, and
    every later Ctrl-C ignored. The command is ending then: a second one (a terminal sends each to the whole group,
    `timeout` passes one on) landed in what reports the first, Python's excepthook or a cleanup, and ended in its
    traceback (sweep 4 row 20). Ignored in the handler itself, the first Python code that runs for the first one, so
    that no later one can find Python code to land in."""
    _ignore_signals()
    raise KeyboardInterrupt


def take_interrupts(before, held: list) -> None:
    """Ctrl-C handled by `interrupt` from now on, once handle_start's hook is in place: the entry points hold it until
    then (their first lines: a holder appending to `held` in place of `before`, the handler they found), and one held
    is raised now. A run started in the background inherits SIGINT ignored, which stays so."""
    if before is signal.default_int_handler and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, interrupt)
        if held:
            interrupt(signal.SIGINT, None)


LINK_LOOP = re.compile(r"Symlink loop from '(.*)'")
LOOP_FIX = "mend or remove the link, then run again"

INTERRUPTED, PIPE_CLOSED = 130, 141  # the shell's codes for SIGINT and SIGPIPE; a stop signal's is 128 + its number


def _written() -> list:
    """The files this process has put in place (atomic_write.WRITTEN; none when nothing imported it)."""
    return getattr(sys.modules.get("slime_image.atomic_write"), "WRITTEN", [])


def interrupted(kept: list, how: str = "interrupted") -> UserError:
    """What Ctrl-C (or a stop signal) leaves: the files in `kept` whole (atomic_write), nothing else it was writing."""
    shown = f" after it wrote {', '.join(map(str, kept))}, each whole;" if kept else ":"
    return UserError(f"{how}{shown} nothing it was writing was kept", "run it again")


class Terminated(BaseException):
    """SIGTERM (which `timeout`, Kubernetes and CI runners send) or SIGHUP (a closed terminal, a dropped ssh), raised
    where the command is, so that its cleanups run as they do for Ctrl-C (a build check's local registry, a
    half-written file, a working container); Python's own handling ends the process at once, and they did not."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def stopped(signal_raised: BaseException) -> tuple[str, int]:
    """How a command was stopped (Ctrl-C, SIGTERM or SIGHUP), as its message says it, and the shell's exit code."""
    if isinstance(signal_raised, Terminated):
        return f"stopped by {signal.Signals(signal_raised.signum).name}", 128 + signal_raised.signum
    return "interrupted", INTERRUPTED


def _terminate(signum, frame) -> None:
    """A stop signal, raised once: a second (`timeout` sends SIGTERM to the command, then to its group) landed in what
    reports the first, or in the interpreter's exit joining a thread pool's workers (concurrent.futures), as a traceback
    after the two lines (sweep 5 T2). Every later stop signal or Ctrl-C changes nothing, as for Ctrl-C (interrupt)."""
    _ignore_signals()
    raise Terminated(signum)


def _raise_on_stop() -> None:
    """Each of STOPS at its default raises Terminated; one ignored on entry (nohup, for SIGHUP) stays ignored."""
    if threading.current_thread() is threading.main_thread():
        for signum in STOPS:
            if signal.getsignal(signum) == signal.SIG_DFL:
                signal.signal(signum, _terminate)


def pipe_closed() -> UserError:
    """What a reader that left early (`| head`) leaves: nothing more reaches it, not even Python's own flush of stdout
    at exit, which would fail again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return UserError("its output was closed before all of it was read", "read the whole output")


def _unheeded(signum, frame) -> None:
    """A Ctrl-C or stop signal once the command is ending: nothing. A handler rather than SIG_IGN, which the children
    a cleanup starts would inherit, so that they could be stopped no more (a handler is reset at exec)."""


def _ignore_signals(handler=_unheeded) -> None:
    """Ctrl-C and the stop signals unheeded from now on, where they are not ignored already (a background job's)."""
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, *STOPS):
            if signal.getsignal(signum) is not signal.SIG_IGN:
                signal.signal(signum, handler)


def _ignore_signals_at_exit() -> None:
    """At the interpreter's exit, SIG_IGN itself: Python sets a signal whose handler is a Python function back to its
    default as it finalizes, so one landing after that killed a command that had done its work and said so (rc -2,
    test_all_or_nothing's promote); no cleanup starts a child then."""
    _ignore_signals(signal.SIG_IGN)


def _quiet_exit() -> None:
    """Once a command's body is over, Ctrl-C or a stop signal while the interpreter exits is unheeded: the work is done
    or reported, and Python would print a traceback of its own. The interpreter first runs threading's exit callbacks
    (concurrent.futures joins its pool's workers there: sweep 5 T2), then the atexit handlers (logging's shutdown);
    registered with both after the body, so after the libraries it imported, so that it runs before theirs."""
    if not getattr(_quiet_exit, "registered", False):
        threading._register_atexit(_ignore_signals_at_exit)
        atexit.register(_ignore_signals_at_exit)
        _quiet_exit.registered = True


# What the system refuses a path for, though it exists: its mode, an attribute, the mount it is on.
REFUSED = (errno.EACCES, errno.EPERM, errno.EROFS)


def os_fix(exc: OSError) -> str:
    """The fix of an OSError: for a path the system refuses, how to free it."""
    if exc.errno in REFUSED and exc.filename:
        return (
            f"free {exc.filename}: its mode and its folder's (ls -ld), an immutable attribute (lsattr; chattr -i) or a "
            "read-only mount; then run again"
        )
    return "check that the path exists and may be read or written"


def run_command(prog: str, main: Callable[[], int], code: int = 1) -> int:
    """Run a command's body; a UserError becomes two lines on stderr and `code` (or the error's own), and so do the
    failures no command foresees one by one."""
    before = len(_written())
    _raise_on_stop()
    try:
        return main()
    except UserError as error:
        report(prog, error)
        return error.code if error.code is not None else code
    except (KeyboardInterrupt, Terminated) as signal_raised:
        how, exit_code = stopped(signal_raised)
        report(prog, interrupted(_written()[before:], how))
        return exit_code
    except BrokenPipeError:
        report(prog, pipe_closed())
        return PIPE_CLOSED
    except subprocess.CalledProcessError as exc:  # a tool a command runs with check=True, wherever it runs it
        said = (exc.stderr or "").strip().splitlines() if isinstance(exc.stderr, str) else []
        why = f": {said[-1]}" if said else ""
        command = shlex.join(map(str, exc.cmd)) if isinstance(exc.cmd, list | tuple) else str(exc.cmd)
        report(
            prog,
            UserError(
                f"`{command[:300]}` failed (exit {exc.returncode}){why}", "mend what its error names, then run again"
            ),
        )
        return code
    except RuntimeError as exc:
        # pathlib's resolve() on a link loop (Python 3.11, 3.12; 3.13 raises OSError): a path met past the parser's own
        # check (a file inside a folder it was given), whichever command resolves it (sweep 6 T1).
        loop = LINK_LOOP.fullmatch(str(exc))
        if loop is None:
            raise
        report(prog, UserError(f"{loop[1]}: a link loop (its links lead back to each other)", LOOP_FIX))
        return code
    except UnicodeError as exc:
        cause = f"cannot read text that is not UTF-8 ({getattr(exc, 'reason', exc)})"
        report(prog, UserError(cause, "give it a UTF-8 text file"))
        return code
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        report(prog, UserError(f"{exc.strerror or exc}{where}", os_fix(exc)))
        return code
    finally:
        _quiet_exit()


def program(names: dict[str, str]) -> str:
    """The name a command's messages say before run_command says its own: `names` (module -> that name) of the module
    run, else the name it was run by (image/bin's link). Under `python -m`, Python finds the module with sys.argv[0]
    set to "-m" and runs it with its own path there, so that a Ctrl-C while it loaded was said as `-m:`, then
    `tools.planner.plan:`, then (run_command) `plan:` (sweep 6 U17): the module is read from the command line as typed
    (sys.orig_argv) while argv[0] is "-m"."""
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    module = main.name if main else None
    if module is None and sys.argv[:1] == ["-m"]:
        given = getattr(sys, "orig_argv", [])
        at = next((n for n, word in enumerate(given[1:], 1) if word.startswith("-m")), None)
        if at is not None:
            module = given[at][2:] or (given[at + 1] if at + 1 < len(given) else None)
    return names.get(module or "", module or os.path.basename(sys.argv[0] or "python"))


def _interrupt_in(error: BaseException | None) -> bool:
    """A Ctrl-C Python raised inside another error: Python 3.11 wraps what a class body's __set_name__ raises in a
    RuntimeError (a Ctrl-C while a dataclass was made, as promote imported its modules, ended in a traceback)."""
    while error is not None:
        if isinstance(error, KeyboardInterrupt):
            return True
        error = error.__cause__
    return False


def _delivered_again(before):
    """An unraisable-exception hook that delivers again a Ctrl-C or stop signal raised where Python ignores what is
    raised (a weakref callback: importlib's module locks as an import ends; a __del__): it was printed as `Exception
    ignored in ... Traceback`, then lost, the command going on as if never stopped (test_all_or_nothing's promote)."""

    def unraisable(info) -> None:
        stop = info.exc_value
        if isinstance(stop, (KeyboardInterrupt, Terminated)) and threading.current_thread() is threading.main_thread():
            signum = getattr(stop, "signum", signal.SIGINT)
            signal.signal(signum, interrupt if signum == signal.SIGINT else _terminate)
            # Sent again from another thread a moment later, so that it lands once this hook has returned (raised
            # here, or as the thread starts, it landed in the hook, which Python ignores as well).
            again = threading.Timer(0.01, signal.pthread_kill, (threading.main_thread().ident, signum))
            again.daemon = True
            again.start()
            return
        before(info)

    return unraisable


def handle_start(missing_fix: str, names: dict[str, str] | None = None) -> None:
    """End what stops a command outside run_command as run_command would, with no traceback: Ctrl-C while Python
    imports what the command needs or while it exits, an output closed early (the dispatcher's usage), and a module
    this interpreter lacks (`missing_fix` says where to get it), each said under the command's one name (program).
    Installed by the entry points (image/bin/slime-image, tools/__init__.py) before any of their imports."""

    def hook(kind, value, traceback):
        _ignore_signals()  # the process ends here: a Ctrl-C would land in this report (one not sent by `interrupt`)
        prog = program(names or {})
        if issubclass(kind, KeyboardInterrupt) or _interrupt_in(value):
            report(prog, interrupted(_written()))
        elif issubclass(kind, BrokenPipeError):
            report(prog, pipe_closed())
        elif issubclass(kind, ModuleNotFoundError) and value.name:
            report(prog, UserError(f"this Python ({sys.executable}) has no module {value.name!r}", missing_fix))
        else:
            sys.__excepthook__(kind, value, traceback)

    sys.excepthook = hook
    sys.unraisablehook = _delivered_again(sys.unraisablehook)
