"""sprio: the factors that make up pending jobs' priorities (priority/multifactor).

Columns follow Slurm's sprio: a factor whose weight is 0 is left out (ASSOC in
the reference capture), NICE appears when some job has a nice value.
"""

from __future__ import annotations

import sys

from plurm.tools.display import OptionError, getopt_long

# (factor key, header, weight key)
FACTORS = (("age", "AGE", "age"), ("assoc", "ASSOC", "assoc"), ("fairshare", "FAIRSHARE", "fairshare"),
           ("jobsize", "JOBSIZE", "jobsize"), ("partition", "PARTITION", "partition"), ("qos", "QOS", "qos"))

SHORT = "hj:lnp:u:vVw"
LONG = {"noheader": ("h", 0), "jobs": ("j", 1), "long": ("l", 0), "norm": ("n", 0), "partition": ("p", 1),
        "user": ("u", 1), "verbose": ("v", 0), "version": ("V", 0), "weights": ("w", 0), "help": ("help", 0),
        "usage": ("usage", 0)}

USAGE = ("Usage: sprio [-j jid[s]] [-u user_name[s]] [-w] [-h] [-l] [-n] [-p partition[s]] [-v] "
         "[--usage] [--help] [-V]\n")


def render(reply: dict, long: bool = False, header: bool = True, weights_only: bool = False) -> str:
    weights = reply.get("weights") or {}
    jobs = reply.get("jobs") or []
    columns = [(key, title) for key, title, wkey in FACTORS if weights.get(wkey)]
    show_nice = long or any(j.get("nice") for j in jobs)
    head = f"{'JOBID':>15} {'PARTITION':<9} "
    if long:
        head += f"{'USER':>8} "
    head += f"{'PRIORITY':>10} {'SITE':>10}" + "".join(f" {title:>10}" for _, title in columns)
    if show_nice:
        head += f" {'NICE':>10}"
    lines = [head] if header else []
    if weights_only:
        row = f"{'Weights':>15} {'':<9} " + (f"{'':>8} " if long else "") + f"{'':>10} {1:>10}"
        row += "".join(f" {weights.get(key, 0):>10}" for key, _ in columns)
        lines.append(row)
        return "\n".join(lines) + "\n"
    for job in jobs:
        factors = job.get("factors", {})
        row = f"{job['job_id']:>15} {job.get('partition', ''):<9} "
        if long:
            row += f"{job.get('user', '')[:8]:>8} "
        row += f"{job.get('priority', 0):>10} {factors.get('site', 0):>10}"
        row += "".join(f" {factors.get(key, 0):>10}" for key, _ in columns)
        if show_nice:
            row += f" {job.get('nice', 0):>10}"
        lines.append(row)
    return "\n".join(lines) + "\n" if lines else ""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        options, _rest = getopt_long("sprio", argv, SHORT, LONG)
    except OptionError as exc:
        sys.stderr.write(str(exc))
        return 1
    opts: dict[str, str | bool] = {}
    for key, value in options:
        opts[key] = value if value is not None else True
    if "help" in opts or "usage" in opts:
        sys.stdout.write(USAGE)
        return 0
    if "V" in opts:
        from plurm.tools.display import version_line

        sys.stdout.write(version_line())
        return 0
    from plurm.corescheduler.client import ClientError, request

    try:
        reply = request("priority_factors", {})
    except ClientError as exc:
        print(f"sprio: error: {exc}", file=sys.stderr)
        return 1
    if reply.get("type") != "priority/multifactor":
        print(f"sprio: error: You are not running a supported priority plugin\n({reply.get('type')}).\n"
              "Only 'priority/multifactor' is supported.", file=sys.stderr)
        return 1
    jobs = reply["jobs"]
    if "j" in opts:
        wanted = {int(j.split("_")[0]) for j in str(opts["j"]).split(",") if j}
        jobs = [j for j in jobs if j["job_id"] in wanted or j.get("array_job_id") in wanted]
    if "u" in opts:
        users = set(str(opts["u"]).split(","))
        jobs = [j for j in jobs if j.get("user") in users]
    if "p" in opts:
        parts = set(str(opts["p"]).split(","))
        jobs = [j for j in jobs if j.get("partition") in parts]
    reply["jobs"] = jobs
    sys.stdout.write(render(reply, long=bool(opts.get("l")), header=not opts.get("h"),
                            weights_only=bool(opts.get("w"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
