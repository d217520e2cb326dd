"""compute-sanitizer memcheck's verdict for the GPU check (scripts/gpu-check.sh): the log's error
blocks, with the leaks streamdet keeps on purpose counted apart: cuDNN's handle (cudnnCreate, one
per device for the process's life, cudnn_library.cpp) and the graph engine's cached plans
(cudnnBackend*, cudnn_graph_conv.cpp). Prints one line; exits 0 when every error is one of those,
9 otherwise (9 also when memcheck failed the run but no block could be read).

    python3 tools/memcheck_verdict.py memcheck.log
"""
import re
import sys

BLOCK_START = re.compile(r"^========= (?!    )(?!ERROR SUMMARY|LEAK SUMMARY|Target application|COMPUTE-SANITIZER)\S")


def blocks_of(lines):
    blocks, cur = [], None
    for line in lines:
        if BLOCK_START.match(line):
            cur = [line]
            blocks.append(cur)
        elif cur is not None and line.startswith("=========     "):
            cur.append(line)
        else:
            cur = None
    return blocks


def main():
    with open(sys.argv[1], errors="replace") as f:
        blocks = blocks_of(f)
    leak = [b for b in blocks if b[0].startswith("========= Leaked")]
    handle = [b for b in leak if any("cudnnCreate" in line for line in b)]
    plans = [b for b in leak if b not in handle and any("cudnnBackend" in line for line in b)]
    other = len(blocks) - len(handle) - len(plans)
    print("memcheck: %d error(s), %d of them leaks of cuDNN's process-lifetime handle (cudnnCreate), "
          "%d of its cached graph plans (cudnnBackend*), %d other" % (len(blocks), len(handle), len(plans), other))
    sys.exit(9 if other or not blocks else 0)


if __name__ == "__main__":
    main()
