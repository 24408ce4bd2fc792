import asyncpg
from starlette.applications import Starlette

app = Starlette()


@app.on_event("startup")
async def startup():
    app.state.pool = await asyncpg.create_pool(dsn="postgresql://events@events-db/events")
