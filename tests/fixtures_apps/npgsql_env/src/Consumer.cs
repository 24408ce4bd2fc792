using Microsoft.EntityFrameworkCore;

namespace Ledger;

// The connection string comes from an env variable read by name (the shape of
// opentelemetry-demo's accounting service), not from ConnectionStrings.
public class LedgerContext : DbContext
{
    protected override void OnConfiguring(DbContextOptionsBuilder optionsBuilder)
    {
        var connectionString = Environment.GetEnvironmentVariable("LEDGER_DB");
        optionsBuilder.UseNpgsql(connectionString);
    }
}
