"""pbench wrap: a training job, unchanged, measured in place (docs/wrap.md).

hook.py runs inside the job (every Python process of it, loaded by
startup/sitecustomize.py); relay.py is the engine pbench starts (python3
-m pbench_wrap), which runs the job and hands pbench its records over the
engine protocol of docs/engines.md."""
