"""Celery tasks that run at most once at a time per key (what celery-once and
celery-singleton are used for), under a polylock lock.

    from polylock.contrib.celery import SingletonTask

    @app.task(base=SingletonTask, lock_key="orders:{order_id}")
    def ship(order_id):
        ...

The worker that runs the task takes the lock ``lock_key`` names (a ``str.format`` template
of the task's arguments, as :func:`polylock.locked` reads it; default: the task's name and
all its arguments, so ``add(1, 2)`` and ``add(1, 3)`` may run side by side and two
``add(1, 2)`` may not), runs the task holding it, and gives it back when the task ends,
whatever the end. The lock lives while the worker does: a watchdog renews it, and a worker
that dies loses it when its lease runs out (``lock_lease``, else the backend's watchdog
lease), so no key stays taken for an hour after a crash.

**A second apply while the first runs** is queued as usual (``apply_async`` never refuses
and never answers with another task's result); its worker waits for the lock up to
``lock_timeout`` seconds (default: as long as it takes) and then runs, so the second run
sees the first run's effects. When the wait runs out the task fails with
:class:`polylock.LockTimeoutError` (``autoretry_for=(LockTimeoutError,)`` retries it later);
with ``lock_skip=True`` it returns None at once instead, without running (ShedLock's rule:
a run that finds another under way is skipped; ``lock_skip`` without a ``lock_timeout``
tries once). Why not at apply time, as celery-once (``AlreadyQueued``) and celery-singleton
(the queued task's ``AsyncResult``) decide: their lock is taken by the process that applies
and released by the worker, a hold that changes hands across processes and that nobody
renews, so it must expire on a guess (celery-once's ``timeout``) and leaks until then when a
worker dies; and it only dedupes the queue, while a task retried, sent by ``send_task`` or
by another producer's version of the code still runs twice. A lock taken by the running
worker is the one place every run passes.

Options, as class attributes of a subclass or keywords of ``@app.task``:
``lock_key`` (template, default None: name and arguments), ``lock_timeout`` (seconds, default
None), ``lock_lease`` (seconds, default None: watchdog), ``lock_skip`` (default False),
``polylock_url`` (default ``app.conf.polylock_url``, else ``$POLYLOCK_URL``, else the
default URL; connected once per worker process). Inside the task, ``self.current_lock`` is
the :class:`polylock.Lock` held for this run (``bind=True``), e.g. for its
``fencing_token``.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import threading
from typing import Any, Dict, Optional

from celery import Task

from .. import _polylock
from .._locked import _UNSET, ClientSource, NameTemplate, _check_timeout
from .._sync import Lock

_sources: Dict[Optional[str], ClientSource] = {}
_sources_guard = threading.Lock()


def _source(url: Optional[str]) -> ClientSource:
    with _sources_guard:
        source = _sources.get(url)
        if source is None:
            source = _sources[url] = ClientSource(url)
        return source


def default_lock_name(task_name: str, arguments: Dict[str, Any]) -> str:
    """``celery:<task name>:<arguments as canonical JSON>``, the JSON replaced by its SHA-256
    when the name would be longer than the backend's limit."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=repr)
    name = f"celery:{task_name}:{text}"
    if len(name.encode()) > _polylock.MAX_NAME_LEN:
        digest = hashlib.sha256(text.encode()).hexdigest()
        name = f"celery:{task_name[: _polylock.MAX_NAME_LEN - 80]}:sha256:{digest}"
    return name


class SingletonTask(Task):
    """A Celery base task run under a lock per key; see the module's doc."""

    #: The lock's name: a template of the task's arguments ("orders:{order_id}"); None: the
    #: task's name and all its arguments.
    lock_key: Optional[str] = None
    #: Seconds to wait for the lock (None: as long as it takes; 0: try once).
    lock_timeout: Optional[float] = _UNSET
    #: Hold the lock at most this long (None: renewed by a watchdog while the task runs).
    lock_lease: Optional[float] = None
    #: Return None without running when the lock is not had (else LockTimeoutError).
    lock_skip: bool = False
    #: The backend (None: ``app.conf.polylock_url``, else ``$POLYLOCK_URL``, else the default).
    polylock_url: Optional[str] = None

    _polylock_local = threading.local()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Checked when the task is defined (``@app.task(base=SingletonTask, ...)`` makes a
        # subclass), not at its first run in a worker.
        super().__init_subclass__(**kwargs)
        _check_timeout(cls.lock_timeout)
        run = cls.__dict__.get("run")
        if isinstance(run, staticmethod):
            run = run.__func__
        if cls.lock_key is not None and run is not None:
            NameTemplate(cls.lock_key, run, what=f"{cls.__name__}: lock_key")

    def lock_name(self, args: tuple, kwargs: Dict[str, Any]) -> str:
        """The name of the lock a call with these arguments takes."""
        template = self.__dict__.get("_polylock_template")
        if template is None:
            if self.lock_key is not None:
                template = NameTemplate(self.lock_key, self.run, what=f"{self.name}: lock_key")
            else:
                template = inspect.signature(self.run)
            self._polylock_template = template
        if isinstance(template, NameTemplate):
            return template.render(args, kwargs)
        bound = template.bind(*args, **kwargs)
        bound.apply_defaults()
        return default_lock_name(self.name, dict(bound.arguments))

    @property
    def current_lock(self) -> Optional[Lock]:
        """The lock this run holds (in the thread running the task), or None."""
        return getattr(self._polylock_local, "lock", None)

    def _wait(self) -> Optional[float]:
        if self.lock_timeout is _UNSET:
            return 0.0 if self.lock_skip else None
        return self.lock_timeout

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        url = self.polylock_url or self.app.conf.get("polylock_url")
        lock = _source(url).sync().lock(self.lock_name(args, kwargs))
        if self.lock_skip:
            if not lock.acquire(timeout=self._wait(), lease=self.lock_lease):
                return None
        else:
            lock.hold(timeout=self._wait(), lease=self.lock_lease)
        previous = self.current_lock
        self._polylock_local.lock = lock
        try:
            result = super().__call__(*args, **kwargs)
        except BaseException:
            try:
                lock.release()
            except Exception:  # the task's own exception is the one to record
                pass
            raise
        finally:
            self._polylock_local.lock = previous
        lock.release()  # LockLostError if the lease ran out while the task ran
        return result


__all__ = ["SingletonTask", "default_lock_name"]
