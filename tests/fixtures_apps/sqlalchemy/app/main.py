from fastapi import FastAPI

from app.db import Session

app = FastAPI()


@app.get("/orders/{order_id}")
def get_order(order_id: int):
    with Session() as session:
        return session.execute("select 1").scalar()
