class SearchQueryTransformer
  OPERATORS = ["Set language", "Reset filters"].freeze # safe: labels

  def apply(scope)
    scope.connection.execute("SET LOCAL enable_seqscan = off") # safe: PA401 SET LOCAL
    scope
  end
end
