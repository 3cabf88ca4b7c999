"""A small MCP server on the official SDK (``MCPServer``) that asks its user for a value (elicitation), for the
guard's tests of what it hears (issue 41).

``ask_order()`` elicits an order id from the user (a form with one string field, ``order_id``) and answers only
whether the user accepted: the id itself reaches the server, never the model's view of a tool result.
``get_order(order_id)`` returns the order, and fails (``isError``) on an id the server does not know. The orders
are fixed: ``ORD-77`` and ``ORD-78``. Run as a script, on stdio.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("orders", version="1.0")
ORDERS = {"ORD-77": {"order_id": "ORD-77", "status": "shipped"}, "ORD-78": {"order_id": "ORD-78", "status": "open"}}


class OrderQuestion(BaseModel):
    order_id: str


@server.tool()
async def ask_order(ctx: Context) -> dict[str, Any]:
    """Ask the user which order they mean."""
    answer = await ctx.elicit("Which order do you mean?", schema=OrderQuestion)
    return {"asked": True, "action": answer.action}


@server.tool()
def get_order(order_id: str) -> dict[str, Any]:
    """One order by its id."""
    if order_id not in ORDERS:
        raise ValueError(f"no order {order_id}")
    return ORDERS[order_id]


if __name__ == "__main__":
    server.run()
