"""The coordinator of SEMANTICS v2.1 as an executable model: storage,
slots, the commit rule, recovery (see oracle.py for what it is for and
the storage choices it makes)."""
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
    # taken: END entries only (SEMANTICS 3): the first checkpoint whose writer state holds it
    __slots__ = ("cp", "comm", "wm", "sp", "synth", "taken")

    def __init__(self, cp, comm, wm, sp, synth=False, taken=None):
        self.cp, self.comm, self.wm, self.sp, self.synth = cp, list(comm), wm, sp, synth
        self.taken = taken

    def same(self, o):
        return self.comm == o.comm and self.wm == o.wm and self.sp == o.sp

    def same_end(self, o):
        # "re-delivers the END entry the state holds" (3): same committables and watermark
        return self.comm == o.comm and self.wm == o.wm

    def copy(self):
        return Entry(self.cp, self.comm, self.wm, self.sp, self.synth, self.taken)


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
        self.end_marked = set()      # pending ids whose tag points at the END snapshot (5.4)
        self.known_no_snap = set()   # ids this instance knows to have no snapshot of their own
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
            # while restoring the slots stay as restored: the recovery commit needs them
            # (target END or r, and the drained decision, 5.4), then clears them
            self.mark_final_done(keep_slots=self.state == "restoring")

    def tag_target(self, s):
        # the snapshot the tag of savepoint s is to point at (5.4): its own, or for a
        # drained savepoint the END snapshot
        return self.st.snapshot_of(self.user, END if s in self.end_marked else s)

    def owed(self):
        # 5.4, 7 (state bytes): pending, and the snapshot its tag is to point at exists
        return sorted(s for s in self.pending if self.tag_target(s) is not None)

    def owed_u(self):
        # 5.5 hold, reading b of tests/conformance/README.md "Ambiguities (v2)": a pending
        # savepoint counts as owed unless this instance knows it has no snapshot of its
        # own (passed with empty entries while nothing at or above it was committed, or
        # folded into the END snapshot); a drained one (END mark) once the END snapshot exists
        out = []
        for c in sorted(self.pending):
            if c in self.end_marked:
                if self.tag_target(c) is not None:
                    out.append(c)
            elif c not in self.known_no_snap or self.tag_target(c) is not None:
                out.append(c)
        return out

    def mark_final_done(self, keep_slots=False):
        # learned from the table; u becomes END at the next run of the commit
        # rule (5.5: u changes only when the commit rule runs)
        self.final_done = True
        if not keep_slots:
            for sl in self.slots.values():
                sl.entries.clear()
                sl.end = None
        self.passed.add(END)
        self.passed_max = END

    def set_u_end_if_free(self):
        if self.final_done and not self.owed_u():
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
            snap = self.tag_target(s)
            name = "savepoint-%d" % s
            if snap is not None:
                # an atomic put-if-absent even when the tag exists (it is then left as it is)
                ct = self.st.read_clock()
                ret = self.cfg["tag_time_retained_ms"]
                self.st.create_tag(name, snap, ct, None if ret is None else ct + ret)
            self.pending.discard(s)
            self.end_marked.discard(s)

    def u_after_failed(self):
        if not self.passed:
            return
        cand = max(self.passed)
        for s in self.owed_u():
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
                else:
                    hi = self.st.highest(self.user)
                    if hi is None or hi < c:
                        self.known_no_snap.add(c)
                for sl in self.slots.values():
                    sl.entries.pop(c, None)
                self.passed.add(c)
                moved = True
                if self.passed_max is None or c > self.passed_max:
                    self.passed_max = c
            if final:
                self.decide_drained()
                for sl in self.slots.values():
                    self.known_no_snap.update(sl.entries)   # folded into the END snapshot
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
            if final and self.st.snapshot_of(self.user, END) is None:
                # the attempt failed before its END snapshot landed: it has not made
                # the final commit and forgets its drained decisions (5.4); the next
                # attempt decides again from the taken values it then holds
                self.end_marked.clear()
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

    def decide_drained(self):
        """5.4, on-checkpoint mode: at the final commit, a pending s <= completed without
        a snapshot of its own, when every END entry has taken <= s, is tagged on the END
        snapshot. Decided from the taken values held when the final commit reaches its END
        snapshot write; an attempt whose END snapshot did not land (fail) has not made the
        final commit, so the next attempt decides again (the END entries may have changed);
        once the final commit happened the decision stays until the tag exists."""
        if self.batch_like():
            return
        self.end_marked.clear()   # only an earlier, failed attempt of this instance marked any
        comp = self.completed
        if comp is None or not self.pending:
            return
        hi_taken = max(sl.end.taken for sl in self.slots.values())
        for s in sorted(self.pending):
            if s <= comp and hi_taken <= s and self.st.snapshot_of(self.user, s) is None:
                self.end_marked.add(s)

    def decide_drained_at_recovery(self):
        """5.4 at a recovery whose target is END and which finds the END snapshot in the
        table: completed = r and the taken values it holds; a pending s <= r without a
        snapshot of its own (and no committables held for s: those were folded into the END
        snapshot with later data) is marked for the END snapshot when every END entry has
        taken <= s. Marks restored from the state stay."""
        if self.batch_like() or not self.pending:
            return
        hi_taken = max(sl.end.taken for sl in self.slots.values())
        for s in sorted(self.pending):
            if (s <= self.r and hi_taken <= s and self.st.snapshot_of(self.user, s) is None
                    and not comm_nonempty(self.slots, s)):
                self.end_marked.add(s)

    def final_due(self):
        """5.3 on-checkpoint: every slot holds an END entry with taken <= completed."""
        if self.completed is None or not self.all_end():
            return False
        return all(sl.end.taken <= self.completed for sl in self.slots.values())

    def mark_final_done_after_write(self):
        # the same state as learning it from the table (mark_final_done)
        self.mark_final_done()

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
            # 5.3: in on-checkpoint mode the final commit happens at whatever run of the
            # rule finds every END entry captured by a completed checkpoint
            if not self.batch_like() and self.final_due():
                self.final_commit()
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
            if sl.end is not None:
                # keeps the taken it had in the state, at most r (no taken: r)
                sl.end.taken = r if sl.end.taken is None else min(sl.end.taken, r)
            self.state_slots[s] = sl
        self.finished = set(finished)
        if self.auto_tag():
            # 5.4, 7: the owed savepoint ids (with their END-snapshot mark) and the aborted
            # ids above the mark; ignored with savepoint-auto-tag off
            for c, at_end in sd.get("owed", ()):
                self.pending.add(c)
                if at_end:
                    self.end_marked.add(c)
            self.aborted.update(sd.get("aborted", ()))
        for s in sorted(self.finished):
            sl = self.state_slots.get(s)
            if sl is None:
                sl = self.state_slots[s] = Slot()
            if sl.end is None:
                sl.end = Entry(END, [], None, False, synth=True, taken=r)
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
                if all_end:
                    # v2.1 reading (5.4, 6.2): the recovery with target END is a final
                    # commit with completed = r; finding this commit user's END snapshot
                    # already written, it applies the drained exception itself
                    self.decide_drained_at_recovery()
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
                sl = self.slot(s)
                taken = self.r + 1
                if sl.end is not None and sl.end.same_end(entry):
                    # the same reading while restoring: a resent END entry keeps its taken
                    taken = min(sl.end.taken, taken)
                sl.end = Entry(END, entry.comm, entry.wm, False, taken=taken)
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
            taken = 0 if sl.max is None else sl.max + 1
            if sl.end is not None and sl.end.same_end(entry):
                # v2.1 reading (3, `taken` by its definition): the same END entry as the
                # one the slot holds (a restarted writer ending its input again) was
                # already in the state of the first checkpoint that held it
                taken = min(sl.end.taken, taken)
            sl.end = Entry(END, entry.comm, entry.wm, False, taken=taken)
            if self.all_end() and self.batch_like():
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
                # an ended writer's late report: its savepoint flag is ignored (v2.1)
                sl.max = c if sl.max is None else max(sl.max, c)
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
        # 5.4, 7: owed savepoint ids with their END-snapshot mark, and the aborted ids
        # above the mark of 3 rule 2 (as the instance knows it)
        owed = [(c, c in self.end_marked) for c in self.owed()]
        mark = self.highest_committed()
        aborted = sorted(a for a in self.aborted if mark is None or a > mark)
        return {"user": self.user, "P": self.P, "slots": slots, "owed": owed,
                "aborted": aborted}

    def complete(self, n):
        self.require("running")
        self.refresh()
        if self.final_done:
            self.tag_retry()
            return
        self.completed = n if self.completed is None else max(self.completed, n)
        if self.all_end() and self.batch_like():
            self.final_commit()
        else:
            self.commit_rule()

    def abort(self, n):
        self.require("running", "restoring")
        self.pending.discard(n)
        self.end_marked.discard(n)
        self.aborted.add(n)
        for group in (self.slots, self.state_slots):
            for sl in group.values():
                if n in sl.entries:
                    sl.entries[n].sp = False
        name = "savepoint-%s" % ("end" if n == END else n)
        tag = self.st.tags.get(name)
        if tag is not None:
            snap = self.st.snapshots[tag["snapshot_id"] - 1]
            # its own snapshot, or (a drained savepoint) this commit user's END snapshot
            if snap["commit_user"] == self.user and snap["identifier"] in (n, END):
                try:
                    self.st.delete_tag(name)
                except StorageError:
                    self.needs_read = True
                    raise

    def reset(self, s, r):
        self.require("running", "restoring")
        self.check_subtask(s)
        if s in self.finished:
            # a finished subtask stays finished for the instance's lifetime (6.2)
            return
        if self.state == "restoring":
            sl = self.state_slots.get(s)
            self.slots[s] = sl.copy() if sl else Slot()
            self._set_restored_max(self.slots[s], False)
            self.restored_set.discard(s)
            return
        self.refresh()
        if self.final_done:
            # no tag retry by subtask-reset (5.3); u may still learn END from the table
            self.set_u_end_if_free()
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
            if s in self.finished:
                return False   # 6.2: ignored after the validation
            base = self.state_slots.get(s)
            sl = Slot()
            if base is not None and base.end is not None:
                sl.end = base.end.copy()
            for e in entries:
                st = self._stored(e)
                if e.cp == END:
                    st.sp = False
                    if base is not None and base.end is not None and base.end.same_end(e):
                        st.taken = base.end.taken
                    else:
                        st.taken = r
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
        if s in self.finished:
            return False   # 6.2: ignored after the validation
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
                st.taken = r
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
        if self.all_end() and self.batch_like():
            if got_end:
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
