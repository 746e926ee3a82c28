"""One handler of the `sam build` output, run as Lambda's python3.12 runtime runs it.

Started as ``python3.12 -I -S lambda_invoke.py`` with the request as JSON on stdin: no site-packages,
no user site, no PYTHONPATH, nothing of the project's venv. ``sys.path`` is what Lambda's is: the
function's code (``/var/task``), its layers merged as Lambda merges them (``/opt/python``), then the
runtime's own boto3 (``/var/runtime``), then the standard library. A handler that imports something
its layers lack fails here with ModuleNotFoundError, as it would on AWS.

Prints the handler's result as JSON on a line of its own, after the request's mark.
"""

import importlib
import json
import os
import sys
import time
import uuid


class Context:
    def __init__(self, name: str, memory: int, timeout: int) -> None:
        self.function_name = name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = memory
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{name}"
        self.log_stream_name = "built"
        self._deadline = time.monotonic() + timeout

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def main() -> None:
    request = json.loads(sys.stdin.read())
    standard = [p for p in sys.path if p and "site-packages" not in p and p != os.path.dirname(__file__)]
    sys.path[:] = [request["task_root"], os.path.join(request["opt"], "python"), request["runtime"], *standard]
    os.chdir(request["task_root"])
    module_name, _, attribute = request["handler"].rpartition(".")
    module = importlib.import_module(module_name)
    handler = getattr(module, attribute)
    for name in request.get("imports") or []:  # what the handler imports when a run needs it
        importlib.import_module(name)
    if request.get("event") is None:  # an import (cold start) only
        result = {"imported": module_name, "modules": sorted(m.split(".")[0] for m in sys.modules)}
    else:
        context = Context(request["function"], request["memory"], request["timeout"])
        result = handler(request["event"], context)
    sys.stdout.write("\n" + request["mark"] + json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
