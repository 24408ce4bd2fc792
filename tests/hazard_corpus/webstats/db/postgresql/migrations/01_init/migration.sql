-- CreateExtension
CREATE EXTENSION IF NOT EXISTS "pgcrypto";

-- CreateTable
CREATE TABLE "website" (
    "website_id" UUID NOT NULL,
    "name" VARCHAR(100) NOT NULL,
    CONSTRAINT "website_pkey" PRIMARY KEY ("website_id")
);
SET search_path TO public; -- expect: PA401 session SET in a migration the app runs at start-up
