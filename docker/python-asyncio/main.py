# Article 001's Python program: N tasks, each asyncio.sleep for 10 s, gathered; exits when all
# finish. The one change: an optional second argument, the sleep length in milliseconds.
import asyncio
import sys

async def main(num_tasks, sleep_s):
    tasks = []

    for task_id in range(num_tasks):
        tasks.append(asyncio.sleep(sleep_s))

    await asyncio.gather(*tasks)

if __name__ == "__main__":
    num_tasks = int(sys.argv[1])
    sleep_ms = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    asyncio.run(main(num_tasks, sleep_ms / 1000))
