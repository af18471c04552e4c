"""The config the heuristic picks for a layer, offline (`lowbit inspect --explain` with
LOWBIT_NO_TUNING_DB=1: no compile), as a dict with the fields of a tuning-file config. Shared by
scripts/heuristic_vs_tuned.py, scripts/heuristic_moved.py and scripts/tuning_loo.py (with `short` and
`offers`, the short form of a config and the timed configs of a tuning entry). `fmt` is a tuning key's format part
("w4.g128.f16.zp", "w2.g128.bf16.zp"; default W4 g128 f16 integer zeros)."""
import os, re, subprocess

FIELDS = ("m_tiles", "n_tiles", "warps_n", "warps_k", "split_k", "stages")
# The flags, in the order of `--config`'s 7th-11th fields and of WqGemmConfig's printed form.
FLAGS = ("x_shared", "wgmma", "stream_k", "x_image", "x_sums")


def config_arg(c):
    """A tuning-file config as `lowbit bench --config`'s value: every field and flag (the flags as 0/1)."""
    return ",".join([str(c[f]) for f in FIELDS] + [str(int(c.get(f, False))) for f in FLAGS])


def format_args(fmt):
    """`lowbit inspect`/`tune`/`bench` arguments for a tuning key's format part, whose grammar is
    w{bits}.{g<size>|pc}.{f16|bf16}[.o32].{mode}[.det][.a16] (tuning_key in src/kernels/wq_gemm_problem.cpp)."""
    f = re.fullmatch(r"w(\d+)\.(g\d+|pc)\.(f16|bf16)(\.o32)?\.(zp|sym|fz|sz)(\.det)?(\.a16)?", fmt)
    if not f:
        raise ValueError(f"tuning key format {fmt!r} does not follow the grammar of tuning_key")
    args = ["--bits", f[1], "--group", "0" if f[2] == "pc" else f[2][1:], "--act", f[3], "--mode", f[5]]
    return args + (["--out", "f32"] if f[4] else []) + (["--deterministic"] if f[6] else []) + (
        ["--accum", "f16"] if f[7] else [])


def parse_config(text):
    """The first WqGemmConfig(...) printed in `text`, as a dict with the fields of a tuning-file config."""
    f = re.search(r"m_tiles=(\d+), n_tiles=(\d+), warps_n=(\d+), warps_k=(\d+), split_k=(\d+), stages=(\d+)"
                  r"(, x_shared)?(, wgmma)?(, stream_k)?(, x_image)?(, x_sums)?", text)
    c = {name: int(v) for name, v in zip(FIELDS, f.groups()[:6])}
    for group, flag in enumerate(FLAGS, 7):
        if f[group]:
            c[flag] = True
    return c


def inspect_explain(lowbit, n, k, m, args, arch="sm_90a", sm_count=132, env=None):
    """The output of `lowbit inspect wq_gemm --explain` for one layer and M (`args`: format and other flags)."""
    return subprocess.run([lowbit, "inspect", "wq_gemm", "--arch", arch, "--sm-count", str(sm_count), "--n", str(n),
                           "--k", str(k), "--m", str(m), "--explain", *args], capture_output=True, text=True,
                          env=env).stdout


def heuristic_config(lowbit, arch, sm_count, n, k, m, fmt="w4.g128.f16.zp"):
    return parse_config(inspect_explain(lowbit, n, k, m, format_args(fmt), arch, sm_count,
                                        env=dict(os.environ, LOWBIT_NO_TUNING_DB="1")))


def short(c):
    # Every field: a runner-up that differs from the best only in x_image or x_sums must not take its
    # key (forty-third session: that read 1.14 for heuristics that were the best).
    return "%d,%d,%d,%d,%d,%d%s%s%s%s%s" % (c["m_tiles"], c["n_tiles"], c["warps_n"], c["warps_k"], c["split_k"],
                                            c["stages"], ",xs" if c.get("x_shared") else "",
                                            ",wg" if c.get("wgmma") else "", ",stream" if c.get("stream_k") else "",
                                            ",img" if c.get("x_image") else "", ",sums" if c.get("x_sums") else "")


def offers(entry):
    """A tuning entry's timed configs (short form) and their times relative to its best: the best 1.0, each
    runner-up its ratio (the first listed where two share a short form)."""
    timed = {short(entry["config"]): 1.0}
    for r in entry.get("runners_up", []):
        timed.setdefault(short(r["config"]), r["us"] / entry["us"])
    return timed
