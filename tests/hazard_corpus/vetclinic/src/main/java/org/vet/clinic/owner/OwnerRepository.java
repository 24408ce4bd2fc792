package org.vet.clinic.owner;

import org.springframework.data.jpa.repository.Query;
import org.springframework.data.jpa.repository.Modifying;
import org.springframework.jdbc.core.JdbcTemplate;

public interface OwnerRepository {
    @Query("SELECT DISTINCT owner FROM Owner owner left join fetch owner.pets WHERE owner.lastName LIKE :lastName%") // safe: JPQL query
    Collection<Owner> findByLastName(String lastName);

    @Modifying
    @Query(value = "SELECT pg_advisory_lock(:id)", nativeQuery = true) // expect: PA403 native query session lock
    void lockOwner(int id);

    @Query(value = "SELECT pg_advisory_xact_lock(:id)", nativeQuery = true) // safe: PA403 xact lock
    void lockOwnerTx(int id);
}
