using System;
using Npgsql;

namespace Tally
{
    public static class Worker
    {
        const string Ledger = "Host=ledger-db;Username=tally;Maximum Pool Size=4;";

        public static void Main(string[] args)
        {
            var votes = Open("Server=votes-db;Port=6432;Username=tally;");
            var again = Open("Server=votes-db;Port=6432;Username=tally;");  // the same pool
            var ledger = Open(Ledger);
            var report = Open(@"Host=report-db;Application Name=""tally"";Pooling=false");
            var host = args[0];
            var dynamic = Open($"Host={host};Username=tally;");  // not read: interpolated
            Console.WriteLine("Server=not-a-connection");  // no ';' pair of a host: skipped
        }

        static NpgsqlConnection Open(string cs)
        {
            var connection = new NpgsqlConnection(cs);
            connection.Open();
            return connection;
        }
    }
}
