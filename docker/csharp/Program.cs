// Article 001's C# program: N Task.Delay of 10 s, awaited with Task.WhenAll; exits when all
// finish. The one change: an optional second argument, the delay in milliseconds.
int numTasks = int.Parse(args[0]);
int delayMs = args.Length > 1 ? int.Parse(args[1]) : 10000;
List<Task> tasks = new List<Task>();

for (int i = 0; i < numTasks; i++)
{
    tasks.Add(Task.Delay(TimeSpan.FromMilliseconds(delayMs)));
}

await Task.WhenAll(tasks);
