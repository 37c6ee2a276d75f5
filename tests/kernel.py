"""A real Jupyter kernel driven as a frontend does: cells run, outputs kept as the frontend
would show them (display updates applied in place), widget buttons clicked by comm message."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from jupyter_client.manager import KernelManager

VIEW = "application/vnd.jupyter.widget-view+json"  # a displayed widget's output


class Cell:
    """One execute request: its outputs as shown (display ids updated in place)."""

    def __init__(self, msg_id: str) -> None:
        self.msg_id = msg_id
        self.outputs: list[dict[str, Any]] = []
        self.done = threading.Event()
        self.started = time.monotonic()
        self.ended: float | None = None
        self.status: str | None = None  # the execute reply's: "ok", "error" or "aborted"

    def text(self) -> str:
        """Every output's text/markdown (else text/plain) and stream text, in order."""
        parts = []
        for out in self.outputs:
            if out["output_type"] == "stream":
                parts.append(out["text"])
            elif out["output_type"] == "error":
                parts.append(f"{out['ename']}: {out['evalue']}")
            else:
                data = out.get("data", {})
                parts.append(str(data.get("text/markdown") or data.get("text/plain") or ""))
        return "\n".join(parts)

    def errors(self) -> list[dict[str, Any]]:
        return [o for o in self.outputs if o["output_type"] == "error"]


class Kernel:
    """``with Kernel() as k: k.run("1+1")``; one reader thread files iopub messages."""

    def __init__(self, cwd: str | None = None) -> None:
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(cwd=cwd)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.cells: dict[str, Cell] = {}
        self.displays: dict[str, list[tuple[Cell, int]]] = {}  # display id -> where it is shown
        self.comms: dict[str, dict[str, Any]] = {}  # comm id -> widget state
        self.update_count = 0
        self.statuses: list[tuple[str, str | None]] = []  # (busy/idle, the message type it answers)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._pump, args=(self.kc.get_iopub_msg, self._file), daemon=True)
        self._reader.start()
        self._replies = threading.Thread(target=self._pump, args=(self.kc.get_shell_msg, self._file_reply), daemon=True)
        self._replies.start()

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self.kc.stop_channels()
        if self.km.has_kernel:
            self.km.shutdown_kernel(now=not self.km.is_alive())
        self._reader.join(5)
        self._replies.join(5)

    def _pump(self, get: Callable[..., dict[str, Any]], file: Callable[[dict[str, Any]], None]) -> None:
        while not self._stop.is_set():
            try:
                msg = get(timeout=0.2)
            except (queue.Empty, Exception):
                continue
            with self._lock:
                file(msg)

    def _file_reply(self, msg: dict[str, Any]) -> None:
        cell = self.cells.get(msg["parent_header"].get("msg_id"))
        if cell is not None and msg["msg_type"] == "execute_reply":
            cell.status = msg["content"].get("status")

    def _file(self, msg: dict[str, Any]) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "comm_open":
            self.comms[content["comm_id"]] = dict(content.get("data", {}).get("state", {}))
            return
        if kind == "comm_close":  # a widget closed: no frontend shows it any more
            self.comms.pop(content["comm_id"], None)
            return
        if kind == "comm_msg":
            data = content.get("data", {})
            if data.get("method") == "update" and content["comm_id"] in self.comms:
                self.comms[content["comm_id"]].update(data.get("state", {}))
            return
        if kind == "update_display_data":
            self.update_count += 1
            for cell, at in self.displays.get(content.get("transient", {}).get("display_id", ""), []):
                cell.outputs[at] = {"output_type": "display_data", "data": content["data"]}
            return
        if kind == "status":
            self.statuses.append((content["execution_state"], msg["parent_header"].get("msg_type")))
        cell = self.cells.get(msg["parent_header"].get("msg_id"))
        if cell is None:
            return
        if kind == "status" and content["execution_state"] == "idle":
            cell.ended = time.monotonic()
            cell.done.set()
        elif kind == "stream":
            if cell.outputs and cell.outputs[-1]["output_type"] == "stream" and cell.outputs[-1]["name"] == content["name"]:
                cell.outputs[-1]["text"] += content["text"]
            else:
                cell.outputs.append({"output_type": "stream", "name": content["name"], "text": content["text"]})
        elif kind in ("display_data", "execute_result"):
            cell.outputs.append({"output_type": kind, "data": content["data"]})
            display_id = content.get("transient", {}).get("display_id")
            if display_id:
                self.displays.setdefault(display_id, []).append((cell, len(cell.outputs) - 1))
        elif kind == "error":
            cell.outputs.append({"output_type": "error", "ename": content["ename"], "evalue": content["evalue"],
                                 "traceback": content["traceback"]})  # fmt: skip
        elif kind == "clear_output":
            cell.outputs.clear()

    def submit(self, code: str) -> Cell:
        with self._lock:
            msg_id = self.kc.execute(code, allow_stdin=False)
            cell = Cell(msg_id)
            self.cells[msg_id] = cell
        return cell

    def run(self, code: str, timeout: float = 120) -> Cell:
        cell = self.submit(code)
        if not cell.done.wait(timeout):
            raise TimeoutError(f"cell did not finish in {timeout} s: {code[:80]!r}; outputs so far: {cell.text()[-500:]}")
        return cell

    def ok(self, code: str, timeout: float = 120) -> Cell:
        cell = self.run(code, timeout)
        assert not cell.errors(), cell.errors()[0]["traceback"][-3:]
        return cell

    def widgets(self, where: Callable[[dict[str, Any]], bool]) -> list[str]:
        with self._lock:
            return [cid for cid, state in self.comms.items() if where(state)]

    def wait_for(self, check: Callable[[], Any], timeout: float = 30, what: str = "a condition") -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                value = check()
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(f"{what} not seen within {timeout} s")

    def _shown(self) -> set[str]:
        """Comm ids of the widgets a frontend shows now: those a cell displays, and their
        children, down (a widget's comm opens when it is made, before it is shown)."""
        todo = [o["data"][VIEW]["model_id"] for cell in self.cells.values() for o in cell.outputs if VIEW in o.get("data", {})]
        shown: set[str] = set()
        while todo:
            cid = todo.pop()
            if cid not in shown:
                shown.add(cid)
                children = self.comms.get(cid, {}).get("children") or []
                todo.extend(c.removeprefix("IPY_MODEL_") for c in children if isinstance(c, str))
        return shown

    def button(self, description: str, timeout: float = 30) -> str:
        """The comm id of an enabled button with this label, once it is shown (as a person
        can click it: its click handler is set by then)."""

        def find() -> str | None:
            shown = self._shown()
            return next((cid for cid, s in self.comms.items() if s.get("_model_name") == "ButtonModel" and cid in shown
                         and s.get("description") == description and not s.get("disabled")), None)  # fmt: skip

        return str(self.wait_for(find, timeout, f"a shown {description!r} button"))

    def click(self, comm_id: str) -> None:
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}})
        self.kc.shell_channel.send(msg)

    def interrupt(self) -> None:
        self.km.interrupt_kernel()
