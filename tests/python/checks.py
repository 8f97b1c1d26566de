"""The check counter of the NVML test scripts: each check prints `ok NAME`
or `FAIL NAME: ...`; `count` and `failed` make the summary line."""


class Checks:
    def __init__(self):
        self.count = 0
        self.failed = 0

    def eq(self, name, got, want):
        self.count += 1
        if got == want:
            print(f"ok {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}: got {got!r}, want {want!r}")

    def true(self, name, cond, detail=""):
        self.count += 1
        if cond:
            print(f"ok {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")
