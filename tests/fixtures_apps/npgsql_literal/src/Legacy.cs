using System.Data.SqlClient;

// SQL Server, in a file that does not use Npgsql: not read.
public static class Legacy
{
    const string Cs = "Server=mssql;Initial Catalog=legacy;User Id=sa;";
}
