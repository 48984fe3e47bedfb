"""The writer helper of SEMANTICS 11 (unchanged in v2.1) as an executable model."""
from semantics import END, Entry

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
