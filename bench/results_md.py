"""results_md.py - writes a benchmark's text into bench/RESULTS.md between its
markers (`<!-- NAME: begin (written by the benchmark) -->` ... `<!-- NAME: end -->`),
replacing what an earlier run wrote there, or appending the section."""
import os


def write_section(path, name, text):
    begin = f"<!-- {name}: begin (written by the benchmark) -->\n"
    end = f"<!-- {name}: end -->\n"
    old = open(path).read() if os.path.exists(path) else ""
    if begin in old and end in old:
        new = old[:old.index(begin)] + begin + text + end + old[old.index(end) + len(end):]
    else:
        new = old + ("\n" if old and not old.endswith("\n") else "") + begin + text + end
    open(path + ".tmp", "w").write(new)
    os.replace(path + ".tmp", path)
