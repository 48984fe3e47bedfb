#!/usr/bin/env python3
"""Independent executable model of SEMANTICS v2 + TRACE-FORMAT v2.

Reads a trace JSON and prints the result document in the canonical layout of
tests/conformance/*.result.json, with "..." for error messages and 0 for
state_bytes (both implementation-defined).

Written from /work/shared/spec/SEMANTICS.md and TRACE-FORMAT.md only (not from
the Rust code). Storage model (TRACE-FORMAT's portability promise plus the
lead's fixed choices): a commit run makes, in this order, one put per snapshot
it writes (filtered snapshots make none), one put-if-absent per savepoint tag
it tags (also when the tag exists: it is then left as it is), then ONE hint put if it wrote at least one
snapshot or moved entries out of the slots (tests/regressions shows the
implementation's hint after a run that only passed an empty checkpoint). Tag deletions are delete calls. Reads (get/list) never fail here.

Usage: oracle.py TRACE.json            -> result on stdout
       oracle.py --check DIR|FILES     -> compare with *.result.json (masked)
"""
import copy
import json
import sys

END = 2**63 - 1
MAXP = 1_000_000


class Malformed(Exception):
    pass


class CoordError(Exception):
    def __init__(self, kind, msg="..."):
        super().__init__(msg)
        self.kind = kind


class StorageError(CoordError):
    def __init__(self):
        super().__init__("storage")


def fatal(kind):
    return CoordError(kind)


# ---------------------------------------------------------------- storage ---

class Storage:
    """The table (shared by every instance) + the host's fault queues + clock."""

    def __init__(self, clock_start, clock_step):
        self.snapshots = []          # dicts, by id
        self.tags = {}               # name -> dict
        self.faults = {"put": [], "get": [], "list": [], "delete": []}
        self.clock_next = clock_start
        self.clock_step = clock_step
        self.hint_dependent = False

    def read_clock(self):
        v = self.clock_next
        self.clock_next += self.clock_step
        return v

    def set_clock(self, ms):
        self.clock_next = ms

    def add_fault(self, call, mode, skip, count):
        self.faults[call].append([skip, count, mode])

    def _fault(self, kind):
        q = self.faults[kind]
        if not q:
            return None
        head = q[0]
        if head[0] > 0:
            head[0] -= 1
            return None
        mode = head[2]
        head[1] -= 1
        if head[1] == 0:
            q.pop(0)
        return mode

    def _call(self, kind, apply):
        mode = self._fault(kind)
        if mode == "fail":
            raise StorageError()
        apply()
        if mode == "ambiguous":
            raise StorageError()

    # queries (reads never fail in this model)
    def highest(self, user):
        hi = None
        for s in self.snapshots:
            if s["commit_user"] == user and (hi is None or s["identifier"] > hi):
                hi = s["identifier"]
        return hi

    def snapshot_of(self, user, ident):
        for s in self.snapshots:
            if s["commit_user"] == user and s["identifier"] == ident:
                return s
        return None

    # writes
    def create_snapshot(self, user, ident, wm, time_ms, committables):
        def apply():
            self.snapshots.append({"id": len(self.snapshots) + 1, "commit_user": user,
                                   "identifier": ident, "watermark": wm,
                                   "time_ms": time_ms, "committables": committables})
        self._call("put", apply)

    def create_tag(self, name, snap, create, expire):
        def apply():
            if name in self.tags:
                return
            self.tags[name] = {"name": name, "snapshot_id": snap["id"],
                               "identifier": snap["identifier"],
                               "create_time_ms": create, "expire_time_ms": expire}
        self._call("put", apply)

    def hint_put(self):
        if self.faults["put"]:
            # a pending put fault counts this call: the result depends on hint puts
            self.hint_dependent = True
        self._call("put", lambda: None)

    def delete_tag(self, name):
        self._call("delete", lambda: self.tags.pop(name))


# ------------------------------------------------------------ coordinator ---

class Entry:
    __slots__ = ("cp", "comm", "wm", "sp", "synth")

    def __init__(self, cp, comm, wm, sp, synth=False):
        self.cp, self.comm, self.wm, self.sp, self.synth = cp, list(comm), wm, sp, synth

    def same(self, o):
        return self.comm == o.comm and self.wm == o.wm and self.sp == o.sp

    def copy(self):
        return Entry(self.cp, self.comm, self.wm, self.sp, self.synth)


class Slot:
    __slots__ = ("entries", "max", "end")

    def __init__(self):
        self.entries = {}   # cp -> Entry (ordinary, uncommitted)
        self.max = None
        self.end = None

    def copy(self):
        s = Slot()
        s.entries = {c: e.copy() for c, e in self.entries.items()}
        s.max = self.max
        s.end = self.end.copy() if self.end else None
        return s


NEG, POS = "-inf", "+inf"


def wm_key(w):
    if w == NEG:
        return (0, 0)
    if w == POS:
        return (2, 0)
    return (1, w)


class Coordinator:
    def __init__(self, storage, cfg):
        self.st = storage
        self.cfg = cfg
        self.state = "created"
        self.P = cfg["parallelism"]
        self.user = cfg["commit_user"]
        self.slots = {}
        self.completed = None
        self.passed = set()          # checkpoint ids this instance passed (5.5)
        self.passed_max = None       # "committed up to" of this instance (rule 2)
        self.u = None
        self.final_done = False
        self.pending = set()
        self.aborted = set()
        self.needs_read = True
        # restoring
        self.r = None
        self.state_slots = {}
        self.finished = set()
        self.restored_set = set()
        self.recovery_wrote = False
        self.wrote_in_call = False

    # -- helpers --
    def slot(self, s):
        sl = self.slots.get(s)
        if sl is None:
            sl = self.slots[s] = Slot()
        return sl

    def check_subtask(self, s):
        if not (0 <= s < self.P):
            raise fatal("invalid-event")

    def auto_tag(self):
        return self.cfg["savepoint_auto_tag"]

    def flag(self, c):
        if self.auto_tag() and c not in self.aborted and c != END:
            self.pending.add(c)

    def all_end(self):
        n = sum(1 for sl in self.slots.values() if sl.end is not None)
        return n == self.P

    def refresh(self):
        """First read of the table, or the re-read after a storage error."""
        if not self.needs_read:
            return
        self.needs_read = False
        if self.st.snapshot_of(self.user, END) is not None:
            self.mark_final_done()

    def owed(self):
        # 5.5: pending, and a snapshot with its identifier exists
        return sorted(s for s in self.pending
                      if self.st.snapshot_of(self.user, s) is not None)

    def mark_final_done(self):
        # learned from the table; u becomes END at the next run of the commit
        # rule (5.5: u changes only when the commit rule runs)
        self.final_done = True
        for sl in self.slots.values():
            sl.entries.clear()
            sl.end = None
        self.passed.add(END)
        self.passed_max = END

    def set_u_end_if_free(self):
        if self.final_done and not self.owed():
            self.u = END

    def highest_committed(self):
        hi = self.st.highest(self.user)
        if self.passed_max is not None and (hi is None or self.passed_max > hi):
            hi = self.passed_max
        return hi

    def wm_at(self, c):
        best = None
        for s in range(self.P) if self.P <= 64 else self._slot_iter():
            sl = self.slots.get(s)
            if sl is not None and c in sl.entries:
                w = sl.entries[c].wm
                w = NEG if w is None else w
            elif sl is not None and sl.end is not None:
                w = POS
            else:
                w = NEG
            if best is None or wm_key(w) < wm_key(best):
                best = w
        return best

    def _slot_iter(self):
        # large P: missing slots are empty (-inf); iterate present ones + one missing
        present = sorted(self.slots)
        if len(present) < self.P:
            return present + [next(i for i in range(self.P) if i not in self.slots)]
        return present

    def write_snapshot(self, ident, comm, wm):
        hi = self.st.highest(self.user)
        if hi is not None and ident <= hi:
            return False
        if wm in (NEG, POS):
            wm = None
        t = self.st.read_clock()
        before = len(self.st.snapshots)
        try:
            self.st.create_snapshot(self.user, ident, wm, t, comm)
        finally:
            if len(self.st.snapshots) > before:
                self.wrote_in_call = True
        return True

    def tag_pass(self, t):
        for s in sorted(self.pending):
            if s > t:
                continue
            snap = self.st.snapshot_of(self.user, s)
            name = "savepoint-%d" % s
            if snap is not None:
                # an atomic put-if-absent even when the tag exists (it is then left as it is)
                ct = self.st.read_clock()
                ret = self.cfg["tag_time_retained_ms"]
                self.st.create_tag(name, snap, ct, None if ret is None else ct + ret)
            self.pending.discard(s)

    def u_after_failed(self):
        if not self.passed:
            return
        cand = max(self.passed)
        for s in self.owed():
            if s > cand:
                continue
            below = [p for p in self.passed if p < s]
            if not below:
                return   # u stays as it was
            cand = min(cand, max(below))
        if self.u is None or cand > self.u:
            self.u = cand
        if self.final_done:
            self.set_u_end_if_free()

    def run(self, target, final=False):
        """One run of the commit rule with a defined target (or the final commit)."""
        wrote = False
        moved = False    # entries left the slots (the hint put follows such a run too)
        try:
            ids = sorted({c for sl in self.slots.values() for c in sl.entries})
            target_had_data = True
            if final:
                comp = self.completed
                low = [c for c in ids if comp is not None and c <= comp]
            else:
                low = [c for c in ids if c <= target]
                wm_target = self.wm_at(target)
                target_had_data = comm_nonempty(self.slots, target)
            forced = (not final and self.cfg["force_create_snapshot"] and not target_had_data)
            for c in low:
                if forced and c == target:
                    # the target's snapshot is the forced one: its (empty) entries
                    # leave only once that snapshot is durable (5.2)
                    continue
                comm = []
                for s in sorted(self.slots):
                    e = self.slots[s].entries.get(c)
                    if e is not None:
                        comm += [[s, x] for x in e.comm]
                if comm:
                    if self.write_snapshot(c, comm, self.wm_at(c)):
                        wrote = True
                for sl in self.slots.values():
                    sl.entries.pop(c, None)
                self.passed.add(c)
                moved = True
                if self.passed_max is None or c > self.passed_max:
                    self.passed_max = c
            if final:
                comm = []
                wm = None
                for s in sorted(self.slots):
                    sl = self.slots[s]
                    for c in sorted(sl.entries):
                        comm += [[s, x] for x in sl.entries[c].comm]
                    comm += [[s, x] for x in sl.end.comm]
                    if not sl.end.synth:
                        w = NEG if sl.end.wm is None else sl.end.wm
                        if wm is None or wm_key(w) < wm_key(wm):
                            wm = w
                if self.write_snapshot(END, comm, wm):
                    wrote = True
                self.mark_final_done_after_write()
                self.tag_pass(END)
            else:
                if forced:
                    if self.write_snapshot(target, [], wm_target):
                        wrote = True
                    for sl in self.slots.values():
                        if sl.entries.pop(target, None) is not None:
                            moved = True
                            self.passed.add(target)
                self.tag_pass(target)
        except StorageError:
            self.needs_read = True
            self.u_after_failed()
            raise
        hint_error = None
        if wrote or moved:
            try:
                self.st.hint_put()
            except StorageError as e:
                # the hint is not part of what the run had to write (5.5): the run
                # still counts as complete for u, but the call reports the error
                self.needs_read = True
                hint_error = e
        if final:
            self.set_u_end_if_free()
        else:
            self.passed.add(target)
            if self.passed_max is None or target > self.passed_max:
                self.passed_max = target
            if self.u is None or target > self.u:
                self.u = target
            if self.final_done:
                self.set_u_end_if_free()
        if hint_error is not None:
            raise hint_error

    def mark_final_done_after_write(self):
        self.final_done = True
        for sl in self.slots.values():
            sl.entries.clear()
            sl.end = None
        self.passed.add(END)
        self.passed_max = END

    def target(self):
        if self.completed is None:
            return None
        t = self.completed
        nonend = 0
        for sl in self.slots.values():
            if sl.end is None:
                if sl.max is None:
                    return None
                nonend += 1
                t = min(t, sl.max)
        ends = sum(1 for sl in self.slots.values() if sl.end is not None)
        if nonend + ends < self.P:
            return None   # a slot never touched: max none
        return t

    def commit_rule(self):
        if self.final_done:
            self.tag_retry()
            return
        if self.all_end():
            return
        t = self.target()
        if t is None:
            return
        self.run(t)

    def final_commit(self):
        self.run(None, final=True)

    def tag_retry(self):
        if self.pending:
            try:
                self.tag_pass(END)
            except StorageError:
                self.needs_read = True
                raise
        self.set_u_end_if_free()

    def batch_like(self):
        return (not self.cfg["checkpointing"]) or self.cfg["final_commit"] == "on-end-input"

    # -- lifecycle --
    def require(self, *states):
        if self.state not in states:
            raise fatal("illegal-state")

    def start(self, restore=None, finished=()):
        cfg = self.cfg
        if not (1 <= self.P <= MAXP) or cfg["commit_user"] == "":
            raise fatal("invalid-config")
        if restore is None:
            self.state = "running"
            return
        r, stbytes = restore
        if stbytes is None:
            raise fatal("corrupt-state")
        sd = stbytes
        if any(v["end"] is not None for v in sd["slots"].values()) and sd["P"] != self.P:
            raise fatal("corrupt-state")
        for s in finished:
            self.check_subtask(s)
        self.user = sd["user"]
        self.r = r
        self.completed = r
        for s, v in sd["slots"].items():
            if s >= self.P:
                continue
            sl = Slot()
            sl.entries = {c: e.copy() for c, e in v["entries"].items()}
            sl.end = v["end"].copy() if v["end"] else None
            self.state_slots[s] = sl
        self.finished = set(finished)
        for s in sorted(self.finished):
            sl = self.state_slots.get(s)
            if sl is None:
                sl = self.state_slots[s] = Slot()
            if sl.end is None:
                sl.end = Entry(END, [], None, False, synth=True)
            for c, e in sl.entries.items():
                if e.sp:
                    self.flag(c)
        self.state = "restoring"
        for s, sl in self.state_slots.items():
            self.slots[s] = sl.copy()
            self._set_restored_max(self.slots[s], s in self.finished)
        self.restored_set = set(self.finished)
        if len(self.restored_set) == self.P:
            self.refresh()
            return self.recovery()
        return False

    def _set_restored_max(self, sl, restored):
        if restored:
            m = self.r
            for c in sl.entries:
                m = max(m, c)
            sl.max = m
        else:
            sl.max = max(sl.entries) if sl.entries else None

    def recovery(self):
        all_end = self.all_end()
        before = len(self.st.snapshots)
        self.wrote_in_call = False
        try:
            if self.final_done:
                self.pending_tag_recovery(END if all_end else self.r)
            elif all_end:
                self.completed = self.r
                self.final_commit()
            else:
                self.run(self.r)
        finally:
            if self.wrote_in_call:
                self.recovery_wrote = True
        self.state = "running"
        if self.final_done:
            self.set_u_end_if_free()
        if self.recovery_wrote and self.cfg["recovery"] == "restart":
            return True
        return False

    def pending_tag_recovery(self, t):
        # final commit already happened: everything is filtered; tags up to t
        try:
            self.tag_pass(t)
        except StorageError:
            self.needs_read = True
            raise
        for sl in self.slots.values():
            sl.entries.clear()
            sl.end = None
        self.set_u_end_if_free()

    # -- calls --
    def event(self, s, entry):
        if self.state == "restoring":
            if entry.cp == END and s in self.restored_set:
                self.check_subtask(s)
                self.refresh()
                if self.final_done:
                    return
                self.slot(s).end = Entry(END, entry.comm, entry.wm, False)
                return
            raise fatal("illegal-state")
        self.require("running")
        self.check_subtask(s)
        self.refresh()
        if self.final_done:
            self.tag_retry()
            return
        sl = self.slot(s)
        c = entry.cp
        if c == END:
            sl.end = Entry(END, entry.comm, entry.wm, False)
            if self.all_end():
                if self.batch_like():
                    self.final_commit()
                return
            self.commit_rule()
            return
        hc = self.highest_committed()
        if hc is not None and c <= hc:
            if sl.max is not None and sl.max >= c:
                self.commit_rule()
                return
            if sl.end is not None and not entry.comm:
                sl.max = c if sl.max is None else max(sl.max, c)
                if entry.sp:
                    self.flag(c)
                self.commit_rule()
                return
            raise fatal("invalid-event")
        if c in sl.entries:
            if sl.entries[c].same(self._stored(entry)):
                self.commit_rule()
                return
            raise fatal("invalid-event")
        if sl.max is not None and c <= sl.max:
            raise fatal("invalid-event")
        e = self._stored(entry)
        sl.entries[c] = e
        sl.max = c
        if entry.sp:
            self.flag(c)
        self.commit_rule()

    def _stored(self, entry):
        e = Entry(entry.cp, entry.comm, entry.wm, entry.sp)
        if e.cp in self.aborted:
            e.sp = False
        return e

    def checkpoint(self, n):
        if self.state in ("created", "restoring"):
            raise CoordError("declined")
        self.require("running")
        slots = {}
        for s, sl in self.slots.items():
            if sl.end is not None:
                slots[s] = {"end": sl.end.copy(),
                            "entries": {c: e.copy() for c, e in sl.entries.items()}}
        return {"user": self.user, "P": self.P, "slots": slots}

    def complete(self, n):
        self.require("running")
        self.refresh()
        if self.final_done:
            self.tag_retry()
            return
        self.completed = n if self.completed is None else max(self.completed, n)
        if self.all_end():
            self.final_commit()
        else:
            self.commit_rule()

    def abort(self, n):
        self.require("running", "restoring")
        self.pending.discard(n)
        self.aborted.add(n)
        for group in (self.slots, self.state_slots):
            for sl in group.values():
                if n in sl.entries:
                    sl.entries[n].sp = False
        name = "savepoint-%s" % ("end" if n == END else n)
        tag = self.st.tags.get(name)
        if tag is not None:
            snap = self.st.snapshots[tag["snapshot_id"] - 1]
            if snap["commit_user"] == self.user and snap["identifier"] == n:
                try:
                    self.st.delete_tag(name)
                except StorageError:
                    self.needs_read = True
                    raise

    def reset(self, s, r):
        self.require("running", "restoring")
        self.check_subtask(s)
        if self.state == "restoring":
            if s in self.finished:
                return
            sl = self.state_slots.get(s)
            self.slots[s] = sl.copy() if sl else Slot()
            self._set_restored_max(self.slots[s], False)
            self.restored_set.discard(s)
            return
        self.refresh()
        if self.final_done:
            self.tag_retry()
            return
        sl = self.slot(s)
        if r is None:
            sl.entries.clear()
        else:
            for c in [c for c in sl.entries if c > r]:
                del sl.entries[c]
        sl.end = None
        sl.max = max(sl.entries) if sl.entries else None
        self.commit_rule()

    def validate_restored(self, r, entries):
        seen = set()
        ends = 0
        for e in entries:
            if e.cp == END:
                ends += 1
            elif e.cp > r:
                raise fatal("invalid-event")
            if e.cp in seen:
                raise fatal("invalid-event")
            seen.add(e.cp)
        if ends > 1:
            raise fatal("invalid-event")

    def restored(self, s, r, entries):
        if self.state == "restoring":
            self.check_subtask(s)
            if r != self.r:
                raise fatal("invalid-event")
            self.validate_restored(r, entries)
            base = self.state_slots.get(s)
            sl = Slot()
            if base is not None and base.end is not None:
                sl.end = base.end.copy()
            for e in entries:
                st = self._stored(e)
                if e.cp == END:
                    st.sp = False
                    sl.end = st
                else:
                    sl.entries[e.cp] = st
                    if e.sp:
                        self.flag(e.cp)
            self.slots[s] = sl
            self._set_restored_max(sl, True)
            self.restored_set.add(s)
            if len(self.restored_set) == self.P:
                # only the call that completes the restore needs the table
                self.refresh()
                return self.recovery()
            return False
        self.require("running")
        self.check_subtask(s)
        self.validate_restored(r, entries)
        self.refresh()
        if self.final_done:
            self.tag_retry()
            return False
        sl = self.slot(s)
        hc = self.highest_committed()
        got_end = False
        for e in entries:
            st = self._stored(e)
            if e.cp == END:
                st.sp = False
                sl.end = st
                got_end = True
            elif hc is not None and e.cp <= hc:
                continue
            else:
                sl.entries[e.cp] = st
                if e.sp:
                    self.flag(e.cp)
        m = r
        if sl.max is not None:
            m = max(m, sl.max)
        sl.max = m
        if self.all_end():
            if got_end and self.batch_like():
                self.final_commit()
            return False
        self.commit_rule()
        return False

    def close(self):
        if self.state in ("closed", "failed"):
            return
        self.state = "closed"


def comm_nonempty(slots, c):
    return any(c in sl.entries and sl.entries[c].comm for sl in slots.values())


# ----------------------------------------------------------------- writer ---

class WriterError(Exception):
    def __init__(self, kind):
        super().__init__(kind)
        self.kind = kind


class Writer:
    def __init__(self, attempt=0):
        self.attempt = attempt
        self.entries = {}     # cp -> Entry
        self.end = None
        self.floor = None     # reports must be above this
        self.highest_u = None
        self.outbox = []

    def report(self, c, comm, wm, sp):
        if self.floor is not None and c <= self.floor:
            raise WriterError("invalid-event")
        e = Entry(c, comm, wm, sp)
        self.entries[c] = e
        self.floor = c
        return ("event", e.copy())

    def end_input(self, comm, wm):
        if self.end is not None:
            self.end = Entry(END, self.end.comm + list(comm), wm, False)
        else:
            self.end = Entry(END, comm, wm, False)
        return ("event", self.end.copy())

    def committed(self, u):
        if self.highest_u is not None and u < self.highest_u:
            return
        self.highest_u = u
        for c in [c for c in self.entries if c <= u]:
            del self.entries[c]
        if u == END:
            self.end = None

    def aborted(self, c):
        if c in self.entries:
            self.entries[c].sp = False

    def state(self):
        return {"entries": {c: e.copy() for c, e in self.entries.items()},
                "end": self.end.copy() if self.end else None}

    def restore(self, st, r):
        if any(c > r for c in st["entries"]):
            raise WriterError("corrupt-state")
        self.entries = {c: e.copy() for c, e in st["entries"].items()}
        self.end = st["end"].copy() if st["end"] else None
        self.floor = r
        ents = [self.entries[c].copy() for c in sorted(self.entries)]
        if self.end:
            ents.append(self.end.copy())
        return ("restored", r, ents)


# ----------------------------------------------------------------- replay ---

V1_COMPAT = False

DEFAULT_CFG = {"checkpointing": True, "final_commit": "on-checkpoint",
               "force_create_snapshot": False, "savepoint_auto_tag": False,
               "tag_time_retained_ms": None, "recovery": "restart"}


def parse_cp(v, allow_end=True):
    if v == "end":
        if not allow_end:
            raise Malformed("end not allowed")
        return END
    if isinstance(v, bool) or not isinstance(v, int) or not (0 <= v <= END - 1):
        raise Malformed("bad checkpoint %r" % (v,))
    return v


def parse_entry(d):
    return Entry(parse_cp(d["checkpoint"]), d.get("committables", []), d.get("watermark"),
                 d.get("savepoint", False))


class Replayer:
    def __init__(self, trace):
        self.trace = trace
        self.cfg = dict(DEFAULT_CFG)
        self.cfg.update(trace["config"])
        self.storage = Storage(trace.get("clock_start_ms", 0), trace.get("clock_step_ms", 0))
        self.inst = {}
        self.kept = {}        # (inst, cp) -> state
        self.writers = {}     # (inst, s) -> Writer
        self.wkept = {}       # (inst, s, cp) -> writer state

    def make(self, name, override, restore, finished):
        cfg = dict(self.cfg)
        cfg.update(override or {})
        c = Coordinator(self.storage, cfg)
        self.inst[name] = c
        rr = False
        try:
            c.start(restore, finished)
        except CoordError as e:
            if isinstance(e, StorageError):
                return None, rr
            c.state = "failed"
            return e, rr
        return None, rr

    def call(self, c, fn, *args):
        """Run one coordinator call; returns (error, restart_required)."""
        try:
            res = fn(*args)
        except StorageError as e:
            return e, False
        except CoordError as e:
            if e.kind != "declined" and c.state not in ("closed", "failed"):
                c.state = "failed"
            return e, False
        return None, bool(res) if isinstance(res, bool) else False

    def deliver(self, name, s, count=None):
        c = self.inst[name]
        w = self.writers[(name, s)]
        err, rr = None, False
        n = len(w.outbox) if count is None else min(count, len(w.outbox))
        for _ in range(n):
            item = w.outbox.pop(0)
            if item[0] == "event":
                e, r2 = self.call(c, c.event, s, item[1].copy())
            else:
                e, r2 = self.call(c, c.restored, s, item[1], [x.copy() for x in item[2]])
            rr = rr or r2
            if e is not None:
                err = e
                break
        return err, rr

    def writer(self, name, s, create=True):
        w = self.writers.get((name, s))
        if w is None:
            if not create:
                raise Malformed("no writer")
            w = self.writers[(name, s)] = Writer()
        return w

    def writers_of(self, name, step):
        if "subtask" in step:
            if (name, step["subtask"]) not in self.writers:
                raise Malformed("subtask")
            return [step["subtask"]]
        ss = sorted(s for (n, s) in self.writers if n == name)
        if not ss:
            raise Malformed("subtask")
        return ss

    def step(self, st):
        op = st["op"]
        name = st.get("instance", "main")
        err, rr, sb = None, False, None
        if op == "start":
            err, rr = self.make(name, st.get("config"), None, ())
        elif op == "failover":
            cp = st["checkpoint"]
            if cp is None:
                err, rr = self.make(name, st.get("config"), None, ())
            else:
                cp = parse_cp(cp, False)
                if "state_hex" in st:
                    state = None   # raw bytes: this model cannot decode them
                else:
                    if (name, cp) not in self.kept:
                        raise Malformed("no kept state")
                    state = self.kept[(name, cp)]
                # restart_required from a recovery inside start
                cfg = dict(self.cfg)
                cfg.update(st.get("config") or {})
                c = Coordinator(self.storage, cfg)
                self.inst[name] = c
                try:
                    rr = bool(self._start_restore(c, cp, state, st.get("finished_subtasks", [])))
                except StorageError as e:
                    err = e
                except CoordError as e:
                    c.state = "failed"
                    err = e
        else:
            if op in ("clock", "storage_fault"):
                if op == "clock":
                    self.storage.set_clock(st["ms"])
                else:
                    cnt = st.get("count", 1)
                    if cnt < 1:
                        raise Malformed("count")
                    self.storage.add_fault(st["call"], st["mode"], st.get("skip", 0), cnt)
            else:
                if name not in self.inst and op not in ("writer_committed", "writer_abort",
                                                        "writer_snapshot"):
                    raise Malformed("no instance %s" % name)
                c = self.inst.get(name)
                if op == "event":
                    err, rr = self.call(c, c.event, st["subtask"], parse_entry(st))
                elif op == "checkpoint":
                    cp = parse_cp(st["checkpoint"])
                    try:
                        state = c.checkpoint(cp)
                        self.kept[(name, cp)] = state
                        sb = 0
                    except CoordError as e:
                        if e.kind != "declined" and c.state not in ("closed", "failed"):
                            c.state = "failed"
                        err = e
                elif op == "complete":
                    err, rr = self.call(c, c.complete, parse_cp(st["checkpoint"]))
                elif op == "abort":
                    err, rr = self.call(c, c.abort, parse_cp(st["checkpoint"]))
                elif op == "reset_subtask":
                    cp = st["checkpoint"]
                    err, rr = self.call(c, c.reset, st["subtask"],
                                        None if cp is None else parse_cp(cp, False))
                elif op == "restored":
                    err, rr = self.call(c, c.restored, st["subtask"],
                                        parse_cp(st["checkpoint"], False),
                                        [parse_entry(e) for e in st["entries"]])
                elif op == "close":
                    c.close()
                elif op == "write":
                    w = self.writer(name, st["subtask"])
                    try:
                        item = w.report(parse_cp(st["checkpoint"], False),
                                        st.get("committables", []), st.get("watermark"),
                                        st.get("savepoint", False))
                        w.outbox.append(item)
                        if st.get("send", True):
                            err, rr = self.deliver(name, st["subtask"])
                    except WriterError as e:
                        err = e
                elif op == "end_input":
                    w = self.writer(name, st["subtask"])
                    item = w.end_input(st.get("committables", []), st.get("watermark"))
                    w.outbox.append(item)
                    if st.get("send", True):
                        err, rr = self.deliver(name, st["subtask"])
                elif op == "send":
                    self.writer(name, st["subtask"])
                    cnt = st.get("count")
                    if cnt is not None and cnt < 1:
                        raise Malformed("count")
                    err, rr = self.deliver(name, st["subtask"], cnt)
                elif op == "writer_committed":
                    ss = self.writers_of(name, st)
                    if "checkpoint" in st:
                        u = parse_cp(st["checkpoint"])
                    else:
                        u = c.u if c is not None else None
                    if u is not None:
                        for s in ss:
                            self.writers[(name, s)].committed(u)
                elif op == "writer_complete" and V1_COMPAT:
                    # v1 op (sanity checks against v1 traces only): drop entries <= c
                    u = parse_cp(st["checkpoint"])
                    for s in self.writers_of(name, st):
                        self.writers[(name, s)].committed(u)
                elif op == "writer_abort":
                    for s in self.writers_of(name, st):
                        self.writers[(name, s)].aborted(parse_cp(st["checkpoint"]))
                elif op == "writer_snapshot":
                    cp = parse_cp(st["checkpoint"], False)
                    for s in self.writers_of(name, st):
                        self.wkept[(name, s, cp)] = self.writers[(name, s)].state()
                elif op == "writer_restore":
                    s = st["subtask"]
                    old = self.writers.get((name, s))
                    att = st.get("attempt", old.attempt + 1 if old else 0)
                    w = self.writers[(name, s)] = Writer(att)
                    cp = st["checkpoint"]
                    if cp is not None:
                        cp = parse_cp(cp, False)
                        if (name, s, cp) not in self.wkept:
                            raise Malformed("checkpoint")
                        try:
                            item = w.restore(self.wkept[(name, s, cp)], cp)
                            w.outbox.append(item)
                            if st.get("send", True):
                                err, rr = self.deliver(name, s)
                        except WriterError as e:
                            err = e
                else:
                    raise Malformed("op %s" % op)
        return err, rr, sb

    def _start_restore(self, c, cp, state, finished):
        try:
            return c.start((cp, state), finished)
        except CoordError:
            raise

    def run(self):
        out = []
        for i, st in enumerate(self.trace["steps"]):
            name = st.get("instance", "main")
            before_snaps = len(self.storage.snapshots)
            before_tags = dict(self.storage.tags)
            err, rr, sb = self.step(st)
            c = self.inst.get(name)
            after_tags = self.storage.tags
            created = sorted(n for n in after_tags if before_tags.get(n) is not after_tags[n])
            deleted = sorted(n for n in before_tags if n not in after_tags)
            res = {"state": c.state if c else "created",
                   "committed": [idj(s["identifier"]) for s in self.storage.snapshots[before_snaps:]],
                   "tags_created": created, "tags_deleted": deleted,
                   "restart_required": rr,
                   "committed_up_to": None if c is None or c.u is None else idj(c.u)}
            if sb is not None:
                res["state_bytes"] = sb
            if err is not None:
                res["error"] = {"kind": err.kind, "message": "..."}
            out.append(res)
        return out


def idj(v):
    return "end" if v == END else v


def render(steps, storage):
    d = lambda o: json.dumps(o, ensure_ascii=False)
    lines = ["{", '  "steps": [']
    lines.append(",\n".join("    " + d(s) for s in steps))
    lines.append("  ],")
    snaps = [{"id": s["id"], "commit_user": s["commit_user"], "identifier": idj(s["identifier"]),
              "watermark": s["watermark"], "time_ms": s["time_ms"],
              "committables": s["committables"]} for s in storage.snapshots]
    tags = [storage.tags[n] for n in sorted(storage.tags, key=lambda n: n.encode())]
    tags = [{"name": t["name"], "snapshot_id": t["snapshot_id"], "identifier": idj(t["identifier"]),
             "create_time_ms": t["create_time_ms"], "expire_time_ms": t["expire_time_ms"]}
            for t in tags]
    for key, items, last in (("snapshots", snaps, False), ("tags", tags, True)):
        tail = "" if last else ","
        if items:
            lines.append('  "%s": [' % key)
            lines.append(",\n".join("    " + d(x) for x in items))
            lines.append("  ]" + tail)
        else:
            lines.append('  "%s": []%s' % (key, tail))
    lines.append("}")
    if not steps:
        lines[2:3] = []
    return "\n".join(lines) + "\n"


def replay(trace):
    rp = Replayer(trace)
    steps = rp.run()
    return render(steps, rp.storage)


def mask(doc, drop_u=False):
    d = json.loads(doc)
    for s in d["steps"]:
        if "error" in s:
            s["error"]["message"] = "..."
        if "state_bytes" in s:
            s["state_bytes"] = 0
        if drop_u:
            s.pop("committed_up_to", None)
    return d


def main(argv):
    global V1_COMPAT
    if len(argv) >= 2 and argv[1] == "--v1":
        V1_COMPAT = True
        argv = argv[:1] + argv[2:]
    if len(argv) >= 2 and argv[1] == "--check":
        import glob
        import os
        files = []
        for a in argv[2:]:
            files += sorted(glob.glob(os.path.join(a, "*.trace.json"))) if os.path.isdir(a) else [a]
        bad = 0
        for f in files:
            exp_f = f.replace(".trace.json", ".result.json")
            try:
                got = replay(json.load(open(f)))
            except Exception as e:  # noqa
                print("ERROR %s: %r" % (f, e))
                bad += 1
                continue
            exp = open(exp_f).read()
            has_u = '"committed_up_to"' in exp
            g, x = mask(got, not has_u), mask(exp)
            if g != x:
                bad += 1
                print("DIFF %s" % os.path.basename(f))
                for i, (a, b) in enumerate(zip(g["steps"], x["steps"])):
                    if a != b:
                        print("  step %d: oracle %s\n          expect %s" % (i, json.dumps(a), json.dumps(b)))
                for k in ("snapshots", "tags"):
                    if g[k] != x[k]:
                        print("  %s: oracle %s\n          expect %s" % (k, json.dumps(g[k]), json.dumps(x[k])))
        print("%d traces, %d differ" % (len(files), bad))
        return 0
    trace = json.load(open(argv[1]))
    try:
        sys.stdout.write(replay(trace))
    except (Malformed, KeyError) as e:
        print("malformed: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
